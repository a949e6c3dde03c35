/**
 * ctx.progress(): a synchronous handler that keeps reporting keeps its lease (the pool's main thread extends it),
 * one that stops reporting is taken for hung; the `progress` event; the value check. Real piscina threads,
 * systemClock, every backend the pool takes.
 */
import { expect, it } from 'vitest';
import { RetryPolicy } from '../../dist/index.js';
import { describePoolBackends, startPool, type PoolTestQueue } from '../support/pool-backends.js';
import { waitUntil } from '../support/helpers.js';

async function settled(queue: PoolTestQueue, id: string, ms = 30_000): Promise<void> {
  await waitUntil(`${id} settled`, async () => {
    const { status } = await queue.view(id);
    return status === 'SUCCEEDED' || status === 'DEAD';
  }, ms);
}

describePoolBackends('WorkerPool progress', (backend) => {
  it('keeps the lease of a synchronous handler that reports progress for several leases: it completes on attempt 1', async () => {
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 1, leaseMillis: 1_000 });
    const heard: number[] = [];
    pool.on('progress', (event) => heard.push(event.progress));
    const id = await queue.submit('busyWithProgress', s.payload({ spinMillis: 3_500 }));
    await settled(queue, id);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(s.events('start', id)).toHaveLength(1);
    expect(await pool.stats()).toMatchObject({ restarts: 0, refused: 0 });
    // Told in batches: some values, each one the handler reported (1, 2, ...), growing.
    expect(heard.length).toBeGreaterThan(0);
    expect(heard).toEqual([...heard].sort((a, b) => a - b));
    expect(heard.every((value) => Number.isInteger(value) && value >= 1)).toBe(true);
  });

  it('takes a handler that stops reporting for hung: its lease ends, the job is retried, the thread is replaced', async () => {
    const { s, queue, pool } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 1, leaseMillis: 1_000 });
    const id = await queue.submit('progressThenStall', s.payload({ reportMillis: 1_500 }));
    await settled(queue, id);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    expect(s.events('stall-ended', id)).toEqual([]);
    expect((await pool.stats()).restarts).toBe(1);
  });

  it('refuses a progress value that is not a finite number with InvalidArgumentError', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(1, 0, 0), { threads: 1 });
    const ids = [await queue.submit('reportValue', s.payload({ value: 'NaN' })), await queue.submit('reportValue', s.payload({ value: '5' })), await queue.submit('reportValue', s.payload({ value: 5 }))];
    for (const id of ids) await settled(queue, id);
    expect(ids.map((id) => s.lines().find((line) => line.jobId === id)?.ev)).toEqual(['refused', 'refused', 'reported']);
    expect(s.events('refused').map((line) => line.code)).toEqual(['ERR_INVALID_ARGUMENT', 'ERR_INVALID_ARGUMENT']);
  });
});

describePoolBackends('WorkerPool progress on the job', (backend) => {
  it('writes the value sampled to the job: view() shows it while RUNNING, and the SUCCEEDED job keeps it', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 1 });
    const id = await queue.submit('progressUntilGo', s.payload({ values: [10, 20, 30.5], go: 'go' }));
    await waitUntil(`${id} shows progress 30.5`, async () => (await queue.view(id)).progress === 30.5);
    expect((await queue.view(id)).status).toBe('RUNNING');
    s.signal('go');
    await settled(queue, id);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', progress: 30.5 });
  });

  it('starts a retry with no progress: the failed attempt\'s value is not shown once the next attempt runs', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 1 });
    const id = await queue.submit('progressUntilGo', s.payload({ values: [40], reportOn: 1, failFirst: true, go: 'go' }));
    // Attempt 2 runs (it logged `reported`, having reported nothing) and waits for go.
    await waitUntil(`${id} attempt 2 running`, () => s.lines().some((line) => line.jobId === id && line.ev === 'reported' && line.attempt === 2));
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 2 });
    expect((await queue.view(id)).progress).toBeUndefined();
    s.signal('go');
    await settled(queue, id);
    expect((await queue.view(id)).progress).toBeUndefined();
  });
});
