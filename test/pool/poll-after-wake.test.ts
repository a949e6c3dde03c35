/**
 * `pollAfterWake`, a pool thread's poll once `blockForWork` woke it: a bump
 * wakes every sleeper, and all but one find the job taken, so a lock-free
 * look that finds nothing ends the call; it never looks again under the
 * lock, which the next submit would wait for. A second instance attached to
 * the queue is the pool thread (a row of its own, as a thread has). Whether
 * a call took the lock shows in the holder's time (LAST_NOW): every locked
 * call stamps its clock reading there, and a lock-free one leaves it.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { QueueMemory } from '../../dist/testing/core-internals.js';
import { trackQueue } from '../support/pool-harness.js';

const START = 1_767_225_600_000;
/** How far the clock moves before a call: within the second a holder leaves before maintenance is due again (NEXT_DUE). */
const STEP = 10;

/** A queue, the pool thread's instance on it (its worker id known and tokens taken: its polls may run lock-free), and a view of its memory. */
function queueWithThread() {
  const clock = new ManualClock(START);
  const queue = trackQueue(new JobQueue(clock, new RetryPolicy(3, 0, 0)));
  const thread = trackQueue(JobQueue.attach(queue.share()));
  // The first poll of an instance runs under the lock (its worker id is new).
  queue.submit('warm-up', '');
  const warm = thread.poll('w', 60_000)!;
  thread.complete(warm.jobId, warm.token);
  return { clock, queue, thread, memory: new QueueMemory(queue.share().buffers, 10_000) };
}

describe('pollAfterWake (a pool thread woken by blockForWork)', () => {
  it('leases a job ready in the rings, as poll does', () => {
    const { clock, queue, thread, memory } = queueWithThread();
    const id = queue.submit('t', 'p');
    const holderTime = memory.lastNow();
    clock.advance(STEP);
    expect(thread.pollAfterWake('w', 60_000)).toMatchObject({ jobId: id, payload: 'p' });
    expect(memory.lastNow(), 'a lock-free lease').toBe(holderTime);
  });

  it('returns nothing when the lock-free look finds nothing, without taking the lock as poll does', () => {
    const { clock, thread, memory } = queueWithThread();
    const holderTime = memory.lastNow();
    clock.advance(STEP);
    expect(thread.pollAfterWake('w', 60_000)).toBeUndefined();
    expect(memory.lastNow(), 'no locked look').toBe(holderTime);
    // A plain poll that finds nothing looks again under the lock, at its own reading.
    expect(thread.poll('w', 60_000)).toBeUndefined();
    expect(memory.lastNow()).toBe(START + STEP);
  });

  it('takes the lock when the queue polls only under it (groups take turns): the job is leased', () => {
    const { clock, queue, thread } = queueWithThread();
    const id = queue.submit('t', 'p', { group: 'g' });
    clock.advance(STEP);
    expect(thread.pollAfterWake('w', 60_000)).toMatchObject({ jobId: id });
  });
});
