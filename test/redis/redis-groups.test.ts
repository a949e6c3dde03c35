/**
 * Groups are the in-memory and journaled queues' only, for now: the Redis
 * queues refuse a submit that names one (rather than run it uncapped and out
 * of turn), and change nothing.
 */
import { expect, it } from 'vitest';
import { InvalidArgumentError, ManualClock, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0 } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

describeRedis('groups on Redis', () => {
  it('refuses submit and submitMany with a group, typed, and stores nothing', async () => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name: `groups-${process.pid}`, time: new ManualClock(T0), policy: new RetryPolicy(3, 0, 0) });
    try {
      await expect(queue.submit('t', 'p', { group: 'A' })).rejects.toSatisfy((e) => e instanceof InvalidArgumentError && e.code === 'ERR_INVALID_ARGUMENT');
      await expect(queue.submitMany([{ type: 't' }, { type: 't', group: 'A' }])).rejects.toBeInstanceOf(InvalidArgumentError);
      expect((await queue.stats()).pending).toBe(0);
      const id = await queue.submit('t', 'p');
      expect((await queue.view(id)).group).toBeNull();
    } finally {
      await queue.close();
    }
  });
});
