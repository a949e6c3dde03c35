/**
 * A WorkerPool runs flows: children first, then each parent, whose handler
 * reads its children's results through ctx.childResults(), on every pool
 * backend (in memory, journaled, Redis, partitioned Redis).
 */
import { expect, it } from 'vitest';
import { RetryPolicy, WorkerPool, type FlowJob } from '../../dist/index.js';
import { describePoolBackends, type PoolTestQueue } from '../support/pool-backends.js';
import { track } from '../support/pool-harness.js';
import { withTimeout } from '../support/helpers.js';

const HANDLERS = new URL('../fixtures/flow-handlers.mjs', import.meta.url);

describePoolBackends('a WorkerPool runs flows', (backend) => {
  it('hands each parent its children\'s results, nested, once they all succeeded', { timeout: 60_000 }, async () => {
    const queue = await backend.open(new RetryPolicy(3, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2 }));
    await pool.start();
    // Every pool backend's queue has submitFlow (PoolTestQueue names only what every pool test needs).
    const [root, a, mid, b, c] = await (queue as PoolTestQueue & { submitFlow(flow: FlowJob): string[] | Promise<string[]> }).submitFlow({ type: 'parent', children: [{ type: 'child', payload: 'a' }, { type: 'parent', children: [{ type: 'child', payload: 'b' }, { type: 'child', payload: 'c' }] }] });
    await withTimeout(pool.drain(), 45_000, 'the pool draining');
    expect((await queue.view(mid!)).result).toEqual({ [b!]: 'bb', [c!]: 'cc' });
    expect((await queue.view(root!)).result).toEqual({ [a!]: 'aa', [mid!]: { [b!]: 'bb', [c!]: 'cc' } });
  });
});
