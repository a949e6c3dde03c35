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
import { JobQueue, ManualClock, RetryPolicy, type JobView } from '../../dist/index.js';
import { QueueMemory, beforeFilings } from '../../dist/testing/core-internals.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const START = 1_767_225_600_000;
const LEASE = 60_000;
const PATIENCE = 20;

const policy = () => new RetryPolicy(1, 0, 0);

/** A queue shared (so that its lock is a real word), and a second instance on its memory to take the lock over. */
function sharedQueue() {
  const clock = new ManualClock(START);
  const queue = new JobQueue(clock, policy(), { lockTimeoutMillis: PATIENCE });
  const taker = new QueueMemory(queue.share().buffers, PATIENCE);
  return { queue, taker, clock };
}

/** As sharedQueue, on a journal at `path`. */
function sharedJournal(path: string, clock: ManualClock) {
  const queue = openJournal(path, clock, policy(), { lockTimeoutMillis: PATIENCE });
  const taker = new QueueMemory(queue.share().buffers, PATIENCE);
  return { queue, taker, clock };
}

/** A queue in memory, or on a journal (then `reopen` closes it and opens its journal again). */
const BACKENDS = [
  { name: 'in memory', open: () => ({ ...sharedQueue(), reopen: undefined }) },
  {
    name: 'on a journal',
    open: () => {
      const path = tempJournal();
      const clock = new ManualClock(START);
      return { ...sharedJournal(path, clock), reopen: (queue: JobQueue) => (closeJournal(queue), sharedJournal(path, clock).queue) };
    },
  },
];

/** What these tests compare of a view across a reopen. */
function flowState(view: JobView) {
  const { status, lastError, nextRunAt, finishedAt, waitingChildren } = view;
  return { status, lastError, nextRunAt, finishedAt, waitingChildren };
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

describe.each(BACKENDS)("a flow under 'fail' whose holder was taken over between a child's death and its parent's ($name)", ({ open }) => {
  it('dead-letters the parent at the rebuild, its lastError naming the child, as the lost move would have', () => {
    const { queue, taker, clock, reopen } = open();
    const [parent, child, other] = queue.submitFlow({ type: 'report', onChildFailure: 'fail', children: [{ type: 'fetch' }, { type: 'fetch' }] });
    const lease = queue.poll('w', LEASE)!;
    expect(lease.jobId).toBe(child);
    clock.advance(1_000);
    expect(takenOverAtFirstFiling(taker, () => queue.fail(lease.jobId, lease.token, 'boom', { permanent: true }))).toBe(true);
    // The queue's next call rebuilds: the parent is DEAD, not left waiting for a child that will not come.
    expect(flowState(queue.view(parent!))).toMatchObject({ status: 'DEAD', lastError: `child ${child} is DEAD`, finishedAt: START + 1_000 });
    expect(queue.view(other!).status).toBe('PENDING');
    expect(queue.stats()).toMatchObject({ dead: 2, pending: 1, waitingChildren: 0 });
    expect(queue.deadLetters().map((view) => view.id).sort()).toEqual([child, parent].sort());
    if (reopen === undefined) return void queue.close();
    // The rebuild's dead-lettering is journaled: the reopen, later, finds the parent as it was left.
    const before = flowState(queue.view(parent!));
    clock.advance(1_000);
    const reopened = reopen(queue);
    expect(flowState(reopened.view(parent!))).toEqual(before);
    closeJournal(reopened);
  });

  it('keeps a parent retried from the dead letters waiting for its DEAD child, and dead-letters it if that child, retried, dies again', () => {
    let { queue, taker, reopen } = open();
    const [parent, child, other] = queue.submitFlow({ type: 'report', onChildFailure: 'fail', children: [{ type: 'fetch' }, { type: 'fetch' }] });
    let lease = queue.poll('w', LEASE)!;
    queue.fail(lease.jobId, lease.token, 'boom', { permanent: true });
    expect(queue.view(parent!).status).toBe('DEAD');
    queue.retryDead(parent!);
    expect(queue.view(parent!).waitingChildren).toBe(2);
    // A rebuild (after a takeover in a call that moves no flow's job) keeps it waiting for both: the DEAD child is to be retried.
    expect(takenOverAtFirstFiling(taker, () => queue.submit('other'))).toBe(true);
    expect(flowState(queue.view(parent!))).toMatchObject({ status: 'PENDING', waitingChildren: 2 });
    if (reopen !== undefined) {
      queue = reopen(queue);
      taker = new QueueMemory(queue.share().buffers, PATIENCE);
      expect(flowState(queue.view(parent!))).toMatchObject({ status: 'PENDING', waitingChildren: 2 });
    }
    queue.retryDead(child!);
    lease = queue.poll('w', LEASE)!;
    expect(lease.jobId).toBe(child);
    expect(takenOverAtFirstFiling(taker, () => queue.fail(lease.jobId, lease.token, 'again', { permanent: true }))).toBe(true);
    // Its second death is the parent's to count, as the first was: the rebuild dead-letters it.
    expect(flowState(queue.view(parent!))).toMatchObject({ status: 'DEAD', lastError: `child ${child} is DEAD` });
    expect(queue.view(other!).status).toBe('PENDING');
    if (reopen === undefined) return void queue.close();
    const before = flowState(queue.view(parent!));
    const reopened = reopen(queue);
    expect(flowState(reopened.view(parent!))).toEqual(before);
    closeJournal(reopened);
  });
});

describe("a rebuild's recount with a journal", () => {
  it('is journaled: a reopen, later, finds the parent as the rebuild left it (ready since the rebuild)', () => {
    const path = tempJournal();
    const clock = new ManualClock(START);
    const { queue, taker } = sharedJournal(path, clock);
    const [parent, child] = queue.submitFlow({ type: 'report', onChildFailure: 'ignore', children: [{ type: 'fetch' }] });
    clock.advance(1_000);
    expect(takenOverAtFirstFiling(taker, () => queue.cancel(child!))).toBe(true);
    const before = flowState(queue.view(parent!));
    expect(before).toMatchObject({ status: 'PENDING', nextRunAt: START + 1_000, waitingChildren: undefined });
    clock.advance(1_000);
    closeJournal(queue);
    const reopened = sharedJournal(path, clock).queue;
    expect(flowState(reopened.view(parent!))).toEqual(before);
    expect(reopened.poll('w', LEASE)).toMatchObject({ jobId: parent });
    closeJournal(reopened);
  });
});
