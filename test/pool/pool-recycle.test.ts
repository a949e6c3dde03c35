/**
 * Recycling pool threads (`maxJobsPerThread`, `maxHeapBytes`): a thread that
 * reached its limit leases no more, settles its jobs, and exits; a fresh
 * thread takes its place. Real threads on every backend: every job succeeds
 * once (none lost, none retried), no thread counts as crashed, and every
 * event reaches the listeners.
 */
import { expect, it } from 'vitest';
import { InvalidArgumentError, RetryPolicy, WorkerPool, type JobEvent, type PoolErrorEvent } from '../../dist/index.js';
import { bad, expectInvalidSync } from '../support/helpers.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { HANDLERS, scratch, track } from '../support/pool-harness.js';

/** The thread ids of the `ok` lines, in the order the jobs ran (one thread: one job at a time). */
function threadsInOrder(lines: readonly { ev: string; threadId?: unknown }[]): number[] {
  return lines.filter((line) => line.ev === 'ok').map((line) => line.threadId as number);
}

describePoolBackends('WorkerPool thread recycling', (backend) => {
  it('recycles a thread after maxJobsPerThread jobs: each thread runs at most that many, every job succeeds once', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000, maxJobsPerThread: 3 }));
    const completed: JobEvent[] = [];
    const errors: PoolErrorEvent[] = [];
    pool.on('completed', (event) => completed.push(event));
    pool.on('error', (event) => errors.push(event));
    await pool.start();
    const ids: string[] = [];
    for (let n = 0; n < 10; n++) ids.push(await queue.submit('noop', s.payload({ n })));
    await pool.drain();
    const threads = threadsInOrder(s.lines());
    expect(threads).toHaveLength(10);
    // Runs of one thread id, in order: 3, 3, 3, 1.
    const runs: number[] = [];
    for (let i = 0; i < threads.length; i++) {
      if (i > 0 && threads[i] === threads[i - 1]) runs[runs.length - 1]!++;
      else runs.push(1);
    }
    expect(runs).toEqual([3, 3, 3, 1]);
    expect(new Set(threads).size).toBe(4);
    expect(completed.map((event) => event.jobId).sort()).toEqual([...ids].sort());
    expect(completed.every((event) => event.attempt === 1)).toBe(true);
    expect(errors).toEqual([]);
    const stats = await pool.stats();
    expect({ succeeded: stats.succeeded, dead: stats.dead, restarts: stats.restarts }).toEqual({ succeeded: 10, dead: 0, restarts: 0 });
  });

  it('recycles a thread whose heap is past maxHeapBytes after a job (here: after every job)', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000, maxHeapBytes: 1 }));
    await pool.start();
    for (let n = 0; n < 6; n++) await queue.submit('noop', s.payload({ n }));
    await pool.drain();
    const threads = threadsInOrder(s.lines());
    expect(threads).toHaveLength(6);
    expect(new Set(threads).size).toBe(6);
    const stats = await pool.stats();
    expect({ succeeded: stats.succeeded, restarts: stats.restarts }).toEqual({ succeeded: 6, restarts: 0 });
  });
});

it('refuses a maxJobsPerThread or maxHeapBytes that is not an integer ≥ 1 or Infinity', () => {
  for (const value of [0, -1, 1.5, Number.NaN, '3', null]) {
    for (const name of ['maxJobsPerThread', 'maxHeapBytes']) {
      const error = expectInvalidSync(() => new WorkerPool(bad({ share: () => ({}) }), { handlers: HANDLERS, [name]: bad(value) }));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.message).toContain(`\`${name}\``);
    }
  }
});
