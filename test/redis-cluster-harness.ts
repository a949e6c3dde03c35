/**
 * The conformance suite's Redis Cluster backend (see test/backends.ts): one
 * private 3-master cluster per test file (bench/redis-cluster.ts), started by
 * the first queue and stopped after the file, whether its tests passed or
 * not; every queue has a name of its own, so queues land on all three masters.
 */
import { redisClusterMissing, startRedisCluster, type RedisCluster } from '../bench/redis-cluster.js';
import { RedisJobQueue } from '../dist/index.js';
import type { Backend } from './backends.js';
import { onePerFile } from './redis-harness.js';

export { redisClusterMissing, startRedisCluster, type RedisCluster };

const sharedCluster = onePerFile(() => startRedisCluster(3));
let queues = 0;

export const redisClusterBackend: Backend = {
  name: 'redis-cluster',
  unavailable: redisClusterMissing,
  async open(clock, policy, options) {
    const cluster = await sharedCluster();
    const name = `conform-${process.pid}-${++queues}`;
    return RedisJobQueue.connect({ redis: { cluster: cluster.nodes }, name, time: clock, policy, ...options });
  },
};
