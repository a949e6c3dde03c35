/**
 * A lock holder taken for dead between a child's end and its parent's count
 * (I28): the child's move stands, the count is lost with the holder, and the
 * successor's rebuild recounts each waiting parent from its children's
 * records. So the parent runs once its last child has ended, not never.
 *
 * The takeover is made at that very point, as in holder-taken-over.test.ts:
 * the holder's first filing after the child's move first lets another
 * instance take the lock over (it waits out the queue's patience, as any
 * waiter does, and holds it); the queue's next call rebuilds.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { QueueMemory, beforeFilings } from '../../dist/testing/core-internals.js';

const START = 1_767_225_600_000;
const LEASE = 60_000;

/** A queue shared (so that its lock is a real word), and a second instance on its memory to take the lock over. */
function sharedQueue() {
  const clock = new ManualClock(START);
  const queue = new JobQueue(clock, new RetryPolicy(1, 0, 0), { lockTimeoutMillis: 20 });
  const taker = new QueueMemory(queue.share().buffers, 20);
  return { queue, taker };
}

/** During `call`, the holder's first filing after its move is preceded by `taker` taking the lock over; true if it was. */
function takenOverAtFirstFiling(taker: QueueMemory, call: () => unknown): boolean {
  let takenOver = false;
  try {
    beforeFilings('file', () => {
      if (!takenOver) takenOver = taker.lock.acquire();
    }, call);
  } finally {
    if (takenOver) taker.lock.release();
  }
  return takenOver;
}

describe('a flow whose holder was taken over between a child\'s end and its parent\'s count', () => {
  it('runs the parent once its last child succeeded: the rebuild counts the cancelled child the holder did not', () => {
    const { queue, taker } = sharedQueue();
    const [parent, first, second] = queue.submitFlow({ type: 'report', onChildFailure: 'ignore', children: [{ type: 'fetch' }, { type: 'fetch' }] });
    expect(takenOverAtFirstFiling(taker, () => queue.cancel(first!))).toBe(true);
    expect(queue.view(first!).status).toBe('CANCELLED');
    // The queue's next call rebuilds (the taker let go with the hints stale): the parent waits for one child.
    expect(queue.view(parent!).waitingChildren).toBe(1);
    const last = queue.poll('w', LEASE)!;
    expect(last.jobId).toBe(second);
    queue.complete(last.jobId, last.token);
    expect(queue.view(parent!).waitingChildren).toBeUndefined();
    expect(queue.poll('w', LEASE)).toMatchObject({ jobId: parent });
    queue.close();
  });

  it("runs the parent once a child it ignores went DEAD, and files it ready at once if that was its last", () => {
    const { queue, taker } = sharedQueue();
    const [parent, child] = queue.submitFlow({ type: 'report', onChildFailure: 'ignore', children: [{ type: 'fetch' }] });
    const lease = queue.poll('w', LEASE)!;
    expect(lease.jobId).toBe(child);
    expect(takenOverAtFirstFiling(taker, () => queue.fail(lease.jobId, lease.token, 'boom', { permanent: true }))).toBe(true);
    expect(queue.view(child!).status).toBe('DEAD');
    expect(queue.poll('w', LEASE)).toMatchObject({ jobId: parent });
    expect(queue.stats()).toMatchObject({ pending: 0, running: 1 });
    queue.close();
  });

  it('keeps the parent waiting for the children not ended: a recount never lets it run early', () => {
    const { queue, taker } = sharedQueue();
    const [parent, first] = queue.submitFlow({ type: 'report', onChildFailure: 'ignore', children: [{ type: 'fetch' }, { type: 'fetch' }, { type: 'fetch' }] });
    expect(takenOverAtFirstFiling(taker, () => queue.cancel(first!))).toBe(true);
    // One child RUNNING, one READY: both still counted.
    const running = queue.poll('w', LEASE)!;
    expect(queue.view(parent!).waitingChildren).toBe(2);
    queue.complete(running.jobId, running.token);
    expect(queue.view(parent!).waitingChildren).toBe(1);
    expect(queue.poll('w', LEASE)?.jobId).not.toBe(parent);
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.close();
  });
});
