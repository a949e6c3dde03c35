/**
 * Shutdown is not failure: `close()` hands every job it interrupts
 * back PENDING and ready, its interrupted attempt not counted and lastError
 * kept, on every backend — whether the handler stops on its aborted signal or
 * outlives the close's grace. `close()` is one Promise however often it is
 * called. `shutdownOn` closes the pool on process signals: a real child
 * process sent SIGTERM or SIGINT mid-job exits 0, its job PENDING as it was.
 */
import { expect, it, describe } from 'vitest';
import { JobQueue, LEASE_LOST, RetryPolicy, systemClock } from '../../dist/index.js';
import { mustPollSync, waitUntil, withTimeout } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';
import { describePoolBackends, startPool } from '../support/pool-backends.js';
import { poolProcess, scratch } from '../support/pool-harness.js';

describePoolBackends('WorkerPool close', (backend) => {
  it('hands back, PENDING and ready, a job whose handler stops on the aborted signal: attempt not counted, no backoff', async () => {
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(1, 60_000, 60_000), { threads: 1, leaseMillis: 10_000 });
    const id = await queue.submit('awaitAbort', s.payload({ then: 'throw' }));
    await waitUntil('the handler started', () => s.events('start', id).length === 1);
    const closing = pool.close();
    expect(pool.close()).toBe(closing);
    await closing;
    expect(s.events('aborted', id).map((l) => l.reason)).toEqual(['the pool is closing']);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
    expect(await queue.stats()).toMatchObject({ pending: 1, ready: 1, running: 0, dead: 0 });
    expect(pool.close()).toBe(closing);
  });

  it('hands back a job that outlives the grace (it ignores the signal), keeping the lastError of the attempt that did fail', async () => {
    // Fails its first attempt, then takes far longer than the close waits (leaseMillis 300: a grace of 1 s).
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 1, leaseMillis: 300 });
    const id = await queue.submit('slowAfterFailing', s.payload({ ms: 60_000 }));
    await waitUntil('the second attempt started', () => s.events('start', id).length === 2);
    await pool.close();
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'first attempt fails' });
    expect(await queue.stats()).toMatchObject({ ready: 1, running: 0 });
  });
});

describe('WorkerPool shutdownOn, in a real child process', { timeout: 30_000 }, () => {
  const policy = (): RetryPolicy => new RetryPolicy(1, 0, 0);

  it.each([
    ['SIGTERM', 'stops on its signal', { type: 'awaitAbort', then: 'throw' }],
    ['SIGINT', 'ignores its signal past the grace', { type: 'slow', ms: 60_000 }],
  ] as const)('closes the pool on %s mid-job (a handler that %s): exit code 0, the job PENDING with attempts unchanged', async (signal, _, job) => {
    const s = scratch();
    const path = tempJournal();
    let queue = openJournal(path, systemClock, policy());
    const id = queue.submit(job.type, s.payload(job));
    closeJournal(queue);
    const child = poolProcess({
      queue: { backend: 'journal', path }, policy: [1, 0, 0], pool: { threads: 1, leaseMillis: 500, shutdownOn: ['SIGTERM', 'SIGINT'] },
    });
    await child.started;
    await waitUntil('the handler started', () => s.events('start', id).length === 1);
    child.child.kill(signal);
    expect(await withTimeout(child.exited, 15_000, 'the child exits')).toEqual({ code: 0, signal: null });

    queue = openJournal(path, systemClock, policy());
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
    expect(queue.stats()).toMatchObject({ ready: 1, running: 0, dead: 0 });
    // Its one attempt is still to come.
    expect(mustPollSync(queue, id).attempt).toBe(1);
  });

  it('without shutdownOn, the same SIGTERM kills the process mid-job, and the attempt is lost (the control case)', async () => {
    const s = scratch();
    const path = tempJournal();
    let queue: JobQueue = openJournal(path, systemClock, policy());
    const id = queue.submit('awaitAbort', s.payload({ then: 'throw' }));
    closeJournal(queue);
    const child = poolProcess({ queue: { backend: 'journal', path }, policy: [1, 0, 0], pool: { threads: 1, leaseMillis: 500 } });
    await child.started;
    await waitUntil('the handler started', () => s.events('start', id).length === 1);
    child.child.kill('SIGTERM');
    expect(await withTimeout(child.exited, 15_000, 'the child exits')).toEqual({ code: null, signal: 'SIGTERM' });
    queue = openJournal(path, systemClock, policy());
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: LEASE_LOST });
  });
});
