/**
 * The conformance suite's Redis Cluster backend (see test/support/backends.ts): one
 * private 3-master cluster per test file (bench/redis-cluster.ts), started by
 * the first queue and stopped after the file, whether its tests passed or
 * not; every queue has a name of its own, so queues land on all three masters.
 */
import { redisClusterMissing, startRedisCluster, type RedisCluster } from '../../bench/redis-cluster.js';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { RedisJobQueue } from '../../dist/index.js';
import type { Backend } from './backends.js';
import { onePerFile, redisOptions } from './redis-harness.js';

export { redisClusterMissing, startRedisCluster, type RedisCluster };

const sharedCluster = onePerFile(() => startRedisCluster(3));
let queues = 0;

export const redisClusterBackend: Backend = {
  name: 'redis-cluster',
  unavailable: redisClusterMissing,
  async open(clock, policy, options) {
    const cluster = await sharedCluster();
    const name = `conform-${process.pid}-${++queues}`;
    return RedisJobQueue.connect({ redis: { cluster: cluster.nodes }, name, time: clock, policy, ...redisOptions(options) });
  },
};

/**
 * For a describe block of its own: a 3-master cluster started before its
 * tests and stopped after them, and `track(queue)`, which closes the queue
 * after the test that opened it.
 */
export function useRedisCluster(): { cluster: () => RedisCluster; track: <Q extends { close(): Promise<void> }>(queue: Q) => Q } {
  let cluster: RedisCluster | undefined;
  const opened: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return {
    cluster: () => cluster!,
    track: (queue) => {
      opened.push(queue);
      return queue;
    },
  };
}
