/**
 * A WorkerPool on a capped Redis queue: its threads claim in batches
 * (pollMany, completeManyAndPoll) and sleep in waitForWork when a cap leaves
 * them nothing, so every job still gets done (a freed place wakes them), and
 * no snapshot of the jobs RUNNING in Redis, taken while the pool works, ever
 * passes a cap. On a RedisJobQueue and on a PartitionedRedisQueue alike.
 */
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { PartitionedRedisQueue, RedisJobQueue, RetryPolicy, WorkerPool, systemClock, type RedisQueueOptions } from '../../dist/index.js';
import { runningCount } from '../fixtures/running-count.mjs';
import { pause } from '../support/helpers.js';
import { HANDLERS, scratch, track, trackQueue } from '../support/pool-harness.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

type TestQueue = RedisJobQueue | PartitionedRedisQueue;

const SHAPES: ReadonlyArray<{ name: string; partitions: number; caps: { queue: number; noop: number }; connect(options: RedisQueueOptions): Promise<TestQueue> }> = [
  { name: 'a RedisJobQueue', partitions: 0, caps: { queue: 4, noop: 2 }, connect: (options) => RedisJobQueue.connect(options) },
  { name: 'a PartitionedRedisQueue of 3 partitions', partitions: 3, caps: { queue: 6, noop: 3 }, connect: (options) => PartitionedRedisQueue.connect({ ...options, partitions: 3 }) },
];

let names = 0;

for (const shape of SHAPES) describeRedis(`WorkerPool on a capped ${shape.name}`, () => {
  it('does every job, never more RUNNING than a cap in any snapshot', { timeout: 90_000 }, async () => {
    const s = scratch();
    const server = await fileRedis();
    const name = `pool-caps-${process.pid}-${++names}`;
    const queue = trackQueue(await shape.connect({ redis: server.url, name, policy: new RetryPolicy(1, 0, 0), time: systemClock }));
    const redis = new Redis(server.url);
    try {
      await queue.setConcurrency(shape.caps.queue);
      await queue.setConcurrency('noop', shape.caps.noop);
      await queue.submitMany(Array.from({ length: 150 }, (_, n) => ({ type: 'noop', payload: s.payload({ n }) })));
      await queue.submitMany(Array.from({ length: 60 }, () => ({ type: 'overlap', payload: s.payload({ ms: 2 }) })));
      const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, concurrency: 4, leaseMillis: 30_000 }));
      await pool.start();
      const names = shape.partitions === 0 ? [name] : Array.from({ length: shape.partitions }, (_, i) => `${name}#${i}`);
      const most = { total: 0, noop: 0 };
      const deadline = Date.now() + 60_000;
      for (;;) {
        const seen = await runningCount(redis, names);
        most.total = Math.max(most.total, seen.total);
        most.noop = Math.max(most.noop, seen.byType['noop'] ?? 0);
        const stats = await queue.stats();
        if (stats.pending + stats.running === 0) break;
        if (Date.now() > deadline) throw new Error(`the pool never finished: ${JSON.stringify(stats)}`);
        await pause(5);
      }
      await pool.close();
      console.log(`[pool caps, ${shape.name}] most RUNNING at once in the snapshots: ${JSON.stringify(most)}; caps ${JSON.stringify(shape.caps)}`);
      expect(most.total).toBeLessThanOrEqual(shape.caps.queue);
      expect(most.noop).toBeLessThanOrEqual(shape.caps.noop);
      expect(await queue.stats()).toMatchObject({ succeeded: 210, dead: 0 });
      expect(s.events('ok')).toHaveLength(210);
    } finally {
      redis.disconnect();
    }
  });
});
