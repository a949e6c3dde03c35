/**
 * Flows are the in-memory and journaled queues' only, for now: both Redis
 * queues refuse submitFlow with UnsupportedOperationError, and store nothing;
 * a pool handler on Redis that asks for its children's results is refused too.
 */
import { expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy, UnsupportedOperationError } from '../../dist/index.js';
import { T0 } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const FLOW = { type: 'parent', children: [{ type: 'child' }] };
const refused = (e: unknown): boolean => e instanceof UnsupportedOperationError && e.code === 'ERR_UNSUPPORTED' && e.message.includes('no flows');

describeRedis('flows on Redis', () => {
  it('refuse submitFlow, typed, on a single and a partitioned queue, and store nothing', async () => {
    const server = await fileRedis();
    const options = { redis: server.url, time: new ManualClock(T0), policy: new RetryPolicy(3, 0, 0) };
    const single = await RedisJobQueue.connect({ ...options, name: `flows-${process.pid}` });
    const partitioned = await PartitionedRedisQueue.connect({ ...options, name: `flows-p-${process.pid}`, partitions: 2 });
    try {
      await expect(single.submitFlow(FLOW)).rejects.toSatisfy(refused);
      await expect(partitioned.submitFlow(FLOW)).rejects.toSatisfy(refused);
      expect((await single.stats()).pending).toBe(0);
      expect((await partitioned.stats()).pending).toBe(0);
    } finally {
      await single.close();
      await partitioned.close();
    }
  });
});
