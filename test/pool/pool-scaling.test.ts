/**
 * A pool between `minThreads` and `maxThreads`: it starts threads while every
 * thread is busy and a job is ready, and lets a thread above minThreads go
 * once it has started no job for `idleTimeoutMillis`. Real threads on every
 * backend; the jobs that need three threads meet one another (each finishes
 * only once all three run at once), so a pool that did not grow fails them.
 */
import { expect, it } from 'vitest';
import { InvalidArgumentError, JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { expectInvalidSync, waitUntil } from '../support/helpers.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { HANDLERS, scratch, track } from '../support/pool-harness.js';

describePoolBackends('WorkerPool minThreads / maxThreads', (backend) => {
  it('grows to maxThreads while all threads are busy and a job is ready, then shrinks to minThreads once idle', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, minThreads: 1, maxThreads: 3, idleTimeoutMillis: 200, leaseMillis: 10_000 }));
    await pool.start();
    expect((await pool.stats()).threads).toBe(1);
    for (let n = 0; n < 3; n++) await queue.submit('meet', s.payload({ group: 'g', parties: 3, giveUpMillis: 30_000 }));
    await pool.drain();
    const ran = s.events('ok');
    expect(ran).toHaveLength(3);
    expect(new Set(ran.map((line) => line.threadId)).size).toBe(3);
    expect((await pool.stats()).succeeded).toBe(3);
    // Idle past idleTimeoutMillis, the two threads above minThreads leave; the one kept still works.
    await waitUntil('the pool is back to minThreads', async () => (await pool.stats()).threads === 1, 20_000);
    await queue.submit('noop', s.payload());
    await pool.drain();
    const stats = await pool.stats();
    expect({ threads: stats.threads, succeeded: stats.succeeded, dead: stats.dead, restarts: stats.restarts }).toEqual({ threads: 1, succeeded: 4, dead: 0, restarts: 0 });
  });
});

it('refuses threads with minThreads or maxThreads, minThreads above maxThreads, and a bad idleTimeoutMillis', () => {
  const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
  const cases = [
    [{ threads: 2, maxThreads: 3 }, 'not both'],
    [{ threads: 2, minThreads: 1 }, 'not both'],
    [{ minThreads: 4, maxThreads: 2 }, '`minThreads` to be at most `maxThreads` (2)'],
    [{ maxThreads: 0 }, '`maxThreads`'],
    [{ minThreads: 1.5, maxThreads: 2 }, '`minThreads`'],
    [{ minThreads: 1, maxThreads: 2, idleTimeoutMillis: 0 }, '`idleTimeoutMillis`'],
  ] as const;
  for (const [options, message] of cases) {
    const error = expectInvalidSync(() => new WorkerPool(queue, { handlers: HANDLERS, ...options }));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error.message).toContain(message);
  }
  const fixed = new WorkerPool(queue, { handlers: HANDLERS, maxThreads: 2 });
  expect(fixed.stats().threads).toBe(2);
});
