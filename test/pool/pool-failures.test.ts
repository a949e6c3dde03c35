/**
 * How an attempt of a WorkerPool job fails, on every backend the pool takes:
 * timeouts (per pool and per job type; a handler that stops on its signal, one
 * that ignores it but yields, one that never yields), a thread out of memory,
 * and job types no handler exports. Real piscina threads, systemClock.
 */
import { expect, it } from 'vitest';
import { RetryPolicy, WorkerPool } from '../../dist/index.js';
import { describePoolBackends, startPool, type PoolTestQueue } from '../support/pool-backends.js';
import { HANDLERS, scratch, track } from '../support/pool-harness.js';
import { waitUntil } from '../support/helpers.js';

/** Resolves once every job in `ids` is SUCCEEDED or DEAD. */
async function settled(queue: PoolTestQueue, ids: readonly string[], ms = 20_000): Promise<void> {
  await waitUntil(`${ids.join(', ')} settled`, async () => {
    const views = await Promise.all(ids.map(async (id) => queue.view(id)));
    return views.every((v) => v.status === 'SUCCEEDED' || v.status === 'DEAD');
  }, ms);
}

describePoolBackends('WorkerPool timeouts', (backend) => {
  it('aborts the signal at timeoutMillis; a handler that stops on it fails with "timed out after N ms", and is retried', async () => {
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(2, 0, 0), { threads: 1, leaseMillis: 10_000, timeoutMillis: 300 });
    const id = await queue.submit('awaitAbort', s.payload({ then: 'throw' }));
    await settled(queue, [id]);
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 2, lastError: 'timed out after 300 ms' });
    expect(s.events('aborted', id).map((l) => [l.attempt, l.reason])).toEqual([[1, 'timed out after 300 ms'], [2, 'timed out after 300 ms']]);
    expect(await pool.stats()).toMatchObject({ restarts: 0, refused: 0 });
  });

  it('fails, after the grace, an attempt that ignores its aborted signal but yields; the thread stays and serves the next job', async () => {
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(1, 0, 0), { threads: 1, leaseMillis: 10_000, timeoutMillis: 200, timeoutGraceMillis: 200 });
    const id = await queue.submit('slow', s.payload({ ms: 5_000 }));
    await settled(queue, [id]);
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: 'timed out after 200 ms' });
    // Not completed behind our back later: the handler's own end is ignored.
    expect(s.events('ok', id)).toEqual([]);
    const next = await queue.submit('noop', s.payload());
    await settled(queue, [next]);
    expect(await queue.view(next)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(await pool.stats()).toMatchObject({ restarts: 0 });
  });

  it('shows a handler that first reads its signal after the timeout the signal aborted, with the reason', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(1, 0, 0), { threads: 1, leaseMillis: 10_000, timeoutMillis: 200, timeoutGraceMillis: 5_000 });
    const id = await queue.submit('slow', s.payload({ ms: 600 }));
    await settled(queue, [id]);
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', lastError: 'timed out after 200 ms' });
    expect(s.events('ok', id)).toEqual([expect.objectContaining({ signalAborted: true, reason: 'timed out after 200 ms' })]);
  });

  it('terminates and replaces a thread whose handler never yields past its timeout and grace, failing it as timed out', async () => {
    // A lease far longer than the timeout: only the timeout can end this attempt soon.
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(2, 0, 0), { threads: 1, leaseMillis: 60_000, timeoutMillis: 300, timeoutGraceMillis: 200 });
    const id = await queue.submit('hang', s.payload());
    await settled(queue, [id]);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'timed out after 300 ms' });
    expect(s.events('start', id).map((l) => l.attempt)).toEqual([1]);
    expect(s.events('ok', id).map((l) => l.attempt)).toEqual([2]);
    expect(s.events('hang-ended')).toEqual([]);
    expect((await pool.stats()).restarts).toBe(1);
  });

  it('takes a timeout per job type, with `default` for the others', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(1, 0, 0), { threads: 2, leaseMillis: 10_000, timeoutMillis: { default: 10_000, awaitAbort: 250 } });
    const short = await queue.submit('awaitAbort', s.payload({ then: 'throw' }));
    const long = await queue.submit('slow', s.payload({ ms: 600 }));
    await settled(queue, [short, long]);
    expect(await queue.view(short)).toMatchObject({ status: 'DEAD', lastError: 'timed out after 250 ms' });
    expect(await queue.view(long)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it("takes a job's own timeoutMillis as its deadline, over the pool's and its type's; its heartbeats keep its lease that long", async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(1, 0, 0), { threads: 1, leaseMillis: 20_000, timeoutMillis: { default: 20_000, awaitAbort: 20_000 } });
    const id = await queue.submit('awaitAbort', s.payload({ then: 'throw' }), { timeoutMillis: 600 });
    await waitUntil(`${id} started`, () => s.events('start', id).length > 0);
    const running = await queue.view(id);
    // The lease the job got, and each heartbeat's, is its own 600 ms, not the pool's 20 s.
    expect(running.status).toBe('RUNNING');
    expect(running.leaseUntil! - Date.now()).toBeLessThanOrEqual(600);
    await settled(queue, [id]);
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: 'timed out after 600 ms' });
    expect(s.events('aborted', id).map((l) => l.reason)).toEqual(['timed out after 600 ms']);
  });
});

describePoolBackends('WorkerPool out of memory', (backend) => {
  it('names the cause when a thread exceeds resourceLimits: lastError says it ran out of memory, and the thread is replaced', async () => {
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(2, 0, 0), { threads: 1, leaseMillis: 10_000, resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 } });
    const id = await queue.submit('exhaustMemory', s.payload());
    await settled(queue, [id], 30_000);
    expect(await queue.view(id)).toMatchObject({
      status: 'SUCCEEDED', attempts: 2, lastError: 'the worker thread ran out of memory (ERR_WORKER_OUT_OF_MEMORY) while running the job',
    });
    expect(s.events('ok', id).map((l) => l.attempt)).toEqual([2]);
    expect((await pool.stats()).restarts).toBe(1);
  });
});

describePoolBackends('WorkerPool unknown job types', (backend) => {
  it('dead-letters a job whose type no handler exports at once, by default', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 1, leaseMillis: 10_000 });
    const id = await queue.submit('typo-in-the-type', s.payload());
    await settled(queue, [id]);
    const view = await queue.view(id);
    expect(view).toMatchObject({ status: 'DEAD', attempts: 1 });
    expect(view.lastError).toContain('No handler for job type "typo-in-the-type"');
  });

  it("retries it after its backoff with unknownTypes: 'retry', until a pool that knows the type is there", async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(50, 20, 20));
    const old = track(new WorkerPool(queue, { handlers: new URL('../fixtures/pool-default.mjs', import.meta.url), threads: 1, leaseMillis: 10_000, unknownTypes: 'retry' }));
    await old.start();
    const id = await queue.submit('noop', s.payload());
    await waitUntil('two attempts failed', async () => (await queue.view(id)).attempts >= 2);
    await old.close();
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING' });
    expect((await queue.view(id)).lastError).toContain('No handler for job type "noop"');
    // The rolling deploy: a newer pool knows the type.
    const next = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000 }));
    await next.start();
    await settled(queue, [id]);
    expect((await queue.view(id)).status).toBe('SUCCEEDED');
  });
});
