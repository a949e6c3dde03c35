/**
 * The conformance suite's Redis Cluster backend (see test/backends.ts): one
 * private 3-master cluster per test file (bench/redis-cluster.ts), started by
 * the first queue and stopped after the file, whether its tests passed or
 * not; every queue has a name of its own, so queues land on all three masters.
 */
import { afterAll } from 'vitest';
import { redisClusterMissing, startRedisCluster, type RedisCluster } from '../bench/redis-cluster.js';
import { RedisJobQueue } from '../dist/index.js';
import type { Backend } from './backends.js';

export { redisClusterMissing, startRedisCluster, type RedisCluster };

let shared: Promise<RedisCluster> | undefined;
let queues = 0;
// Registered as the file is collected (a hook registered while a test runs would never run).
afterAll(async () => {
  const cluster = await shared?.catch(() => undefined);
  shared = undefined;
  await cluster?.stop();
});

export const redisClusterBackend: Backend = {
  name: 'redis-cluster',
  unavailable: redisClusterMissing,
  async open(clock, policy, options) {
    shared ??= startRedisCluster(3);
    const cluster = await shared;
    const name = `conform-${process.pid}-${++queues}`;
    return RedisJobQueue.connect({ redis: { cluster: cluster.nodes }, name, time: clock, policy, ...options });
  },
};
