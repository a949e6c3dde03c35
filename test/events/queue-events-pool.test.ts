/**
 * A WorkerPool's moves reach `queue.events()` on every backend the pool takes, with the pool's
 * own event shapes: each job heard once, in its order, as the pool itself tells it. Waits are counts.
 */
import { expect, it } from 'vitest';
import { RetryPolicy, WorkerPool, type QueueEvents } from '../../dist/index.js';
import { waitUntil } from '../support/helpers.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { HANDLERS, scratch, track } from '../support/pool-harness.js';

describePoolBackends('queue events of a WorkerPool', (backend) => {
  it("hears each of the pool's jobs once, in its order, as the pool tells it", async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(2, 0, 0));
    const events = await (queue as unknown as { events(): QueueEvents | Promise<QueueEvents> }).events();
    const byJob = new Map<string, string[]>();
    for (const name of ['completed', 'failed', 'retrying', 'dead'] as const) {
      events.on(name, (event) => byJob.set(event.jobId, [...(byJob.get(event.jobId) ?? []), `${name}:${event.attempt}:${event.type}`]));
    }
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    const poolCompleted: string[] = [];
    pool.on('completed', (event) => poolCompleted.push(event.jobId));
    await pool.start();
    const ids: string[] = [];
    for (let n = 0; n < 40; n++) ids.push(await queue.submit('noop', s.payload({ n })));
    const failing = await queue.submit('alwaysFails', s.payload());
    await waitUntil('every job heard', () => ids.every((id) => byJob.has(id)) && byJob.get(failing)?.length === 4, 30_000);
    await pool.close();
    await events.close();
    for (const id of ids) expect(byJob.get(id), id).toEqual(['completed:1:noop']);
    expect(byJob.get(failing)).toEqual(['failed:1:alwaysFails', 'retrying:1:alwaysFails', 'failed:2:alwaysFails', 'dead:2:alwaysFails']);
    expect(byJob.size).toBe(41);
    expect([...poolCompleted].sort()).toEqual([...ids].sort());
  });
});
