/**
 * The Redis tests' harness. The private redis-server itself is
 * bench/redis-server.ts (one launcher for tests and benchmarks); the tests use
 * its default, AOF on and fsynced on every write, no RDB snapshots.
 *
 * Without a redis-server binary the Redis suites do not pass silently:
 * `describeRedis` registers them skipped, beside a loudly named placeholder,
 * and warns how to install it — or fails them when LEASEHOLD_REQUIRE_REDIS=1.
 */
import { afterAll, describe, it } from 'vitest';
import { redisMissing, startRedis, type RedisServer } from '../../bench/redis-server.js';
import { PartitionedRedisQueue, RedisJobQueue, type JobQueueOptions } from '../../dist/index.js';
import type { Backend, ContractQueue } from './backends.js';

export { redisMissing, startRedis, type RedisServer };

/**
 * `describe` for a suite that needs redis-server: runs it when there is one;
 * otherwise fails it (LEASEHOLD_REQUIRE_REDIS=1) or skips it, loudly.
 */
export function describeRedis(name: string, body: () => void): void {
  const missing = redisMissing();
  if (missing === null) {
    describe(name, body);
  } else if (process.env['LEASEHOLD_REQUIRE_REDIS'] === '1') {
    describe(name, () => {
      it('needs redis-server (LEASEHOLD_REQUIRE_REDIS=1)', () => {
        throw new Error(`Redis tests cannot run: ${missing}`);
      });
    });
  } else {
    console.warn(`\n*** Redis tests were SKIPPED (${name}): ${missing} ***\n`);
    describe.skip(name, body);
    describe(`REDIS TESTS SKIPPED: ${name}`, () => {
      it.skip(`SKIPPED: ${missing}`, () => undefined);
    });
  }
}

/**
 * A server (or cluster) for the whole test file, started by the first call of
 * the function this returns and stopped after the file, whether its tests
 * passed or not. Call it as the file is collected: the hook it registers then
 * runs (one registered while a test runs would never run).
 */
export function onePerFile<T extends { stop(): Promise<void> }>(start: () => Promise<T>): () => Promise<T> {
  let shared: Promise<T> | undefined;
  afterAll(async () => {
    const started = await shared?.catch(() => undefined);
    shared = undefined;
    await started?.stop();
  });
  return () => (shared ??= start());
}

/** This test file's private redis-server: started by the first caller, stopped after the file. */
export const fileRedis = onePerFile(() => startRedis());
let queues = 0;

/**
 * The conformance suite's Redis backend (see test/support/backends.ts): one private
 * server per test file, started by the first queue and stopped after the
 * file; every queue has a name of its own, so it starts empty at J1.
 */
export const redisBackend: Backend = {
  name: 'redis',
  // Required (CI): never skipped, so a missing server fails every Redis conformance test.
  unavailable: () => (process.env['LEASEHOLD_REQUIRE_REDIS'] === '1' ? null : redisMissing()),
  async open(clock, policy, options) {
    const server = await fileRedis();
    return RedisJobQueue.connect({ redis: server.url, name: `conform-${process.pid}-${++queues}`, time: clock, policy, ...redisOptions(options) });
  },
};

/** The partitioned queue (two partitions) on the file's server: the contract's rules about one job hold on it too. */
export const redisPartitionedBackend: Backend = {
  name: 'redis-partitioned',
  unavailable: redisBackend.unavailable,
  async open(clock, policy, options) {
    const server = await fileRedis();
    const name = `conform-${process.pid}-${++queues}`;
    return PartitionedRedisQueue.connect({ redis: server.url, name, partitions: 2, time: clock, policy, ...redisOptions(options) }) as unknown as Promise<ContractQueue>;
  },
};

/**
 * A conformance test's queue options as RedisJobQueue.connect takes them:
 * without the shared-memory queue's own (`arenaBytes`, `lockTimeoutMillis`),
 * which connect refuses, as it refuses any key it does not know.
 */
export function redisOptions(options: JobQueueOptions | undefined): Omit<JobQueueOptions, 'arenaBytes' | 'lockTimeoutMillis'> {
  const { arenaBytes: _arena, lockTimeoutMillis: _lock, ...rest } = options ?? {};
  return rest;
}
