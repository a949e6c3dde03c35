/**
 * A WorkerPool runs flows: children first, then each parent, whose handler
 * reads its children's results through ctx.childResults(); on Redis, which has
 * no flows, ctx.childResults() is refused with ERR_UNSUPPORTED.
 */
import { expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool } from '../../dist/index.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { track } from '../support/pool-harness.js';
import { withTimeout } from '../support/helpers.js';

const HANDLERS = new URL('../fixtures/flow-handlers.mjs', import.meta.url);

describePoolBackends('a WorkerPool runs flows', (backend) => {
  it('hands each parent its children\'s results, nested, once they all succeeded', { timeout: 60_000 }, async () => {
    const queue = await backend.open(new RetryPolicy(3, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2 }));
    await pool.start();
    if (!(queue instanceof JobQueue)) {
      const id = await queue.submit('ask', 'x');
      await withTimeout(pool.drain(), 45_000, 'the pool draining');
      expect((await queue.view(id)).result).toBe('ERR_UNSUPPORTED');
      return;
    }
    const [root, a, mid, b, c] = queue.submitFlow({ type: 'parent', children: [{ type: 'child', payload: 'a' }, { type: 'parent', children: [{ type: 'child', payload: 'b' }, { type: 'child', payload: 'c' }] }] });
    await withTimeout(pool.drain(), 45_000, 'the pool draining');
    expect(queue.view(mid!).result).toEqual({ [b!]: 'bb', [c!]: 'cc' });
    expect(queue.view(root!).result).toEqual({ [a!]: 'aa', [mid!]: { [b!]: 'bb', [c!]: 'cc' } });
  });
});
