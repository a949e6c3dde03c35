/**
 * `pool.run(type, payload)`: submit and wait, as piscina's `run` does, on
 * every backend, with real pool threads. It resolves with the handler's
 * return value, rejects with JobFailedError carrying the last attempt's
 * error once the job is DEAD, and submits nothing when it refuses.
 */
import { expect, it } from 'vitest';
import {
  AbortedError, IllegalStateError, InvalidArgumentError, JobFailedError, RetryPolicy, WorkerPool,
} from '../../dist/index.js';
import { bad, expectError } from '../support/helpers.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { HANDLERS, scratch, track } from '../support/pool-harness.js';

describePoolBackends('WorkerPool#run', (backend) => {
  it("resolves with each job's own result, for many runs at once", async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(3, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    await pool.start();
    const results = await Promise.all(Array.from({ length: 20 }, (_, n) => pool.run('double', JSON.stringify({ dir: s.dir, n }))));
    expect(results).toEqual(Array.from({ length: 20 }, (_, n) => ({ doubled: 2 * n })));
    expect(await pool.run('noop', s.payload())).toBeUndefined();
  });

  it('rejects with JobFailedError (ERR_JOB_FAILED) carrying the last attempt\'s error once the job is DEAD', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(2, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    await pool.start();
    const error = await expectError(() => pool.run('alwaysFails', s.payload()), JobFailedError, 'ERR_JOB_FAILED');
    expect({ status: error.status, lastError: error.lastError }).toEqual({ status: 'DEAD', lastError: 'boom on attempt 2' });
    expect((await queue.view(error.jobId)).attempts).toBe(2);
    // Submit's options apply: a job of its own maxAttempts dies after one attempt.
    const once = await expectError(() => pool.run('alwaysFails', s.payload(), { maxAttempts: 1 }), JobFailedError, 'ERR_JOB_FAILED');
    expect(once.lastError).toBe('boom on attempt 1');
  });

  it('stops waiting with AbortedError when its signal aborts; the job goes on', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000 }));
    await pool.start();
    const controller = new AbortController();
    controller.abort();
    await expectError(() => pool.run('noop', s.payload(), { signal: controller.signal }), AbortedError, 'ERR_ABORTED');
    await pool.drain();
    expect((await queue.stats()).succeeded).toBe(1);
  });

  it('submits nothing when it refuses: a pool not started or closed (IllegalStateError), a bad submit or options (InvalidArgumentError)', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000 }));
    await expectError(() => pool.run('noop', s.payload()), IllegalStateError, 'ERR_ILLEGAL_STATE');
    await pool.start();
    await expectError(() => pool.run('', s.payload()), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectError(() => pool.run('noop', s.payload(), bad(7)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectError(() => pool.run('noop', s.payload(), { priority: bad('high') }), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await pool.close();
    await expectError(() => pool.run('noop', s.payload()), IllegalStateError, 'ERR_ILLEGAL_STATE');
    const stats = await queue.stats();
    expect(stats.pending + stats.running + stats.succeeded + stats.dead).toBe(0);
  });
});
