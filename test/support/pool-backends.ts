/**
 * The backends a WorkerPool takes, for pool tests that must hold on each:
 * shared memory, a journal, Redis (one queue, and one partitioned over 3
 * hash tags). `describePoolBackends(title, body)` runs
 * `body` once per backend (Redis through `describeRedis`: skipped loudly, or
 * failed under LEASEHOLD_REQUIRE_REDIS=1, when there is no redis-server).
 * Queues run on systemClock and are closed after the test, after its pools.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe } from 'vitest';
import {
  JobQueue, PartitionedRedisQueue, RedisJobQueue, RetryPolicy, WorkerPool, systemClock, type JobLogs, type JobView, type PoolQueue, type QueueStats, type SubmitOptions, type WorkerPoolOptions,
} from '../../dist/index.js';
import { HANDLERS, scratch, track, trackQueue, type Scratch } from './pool-harness.js';
import { describeRedis, fileRedis } from './redis-harness.js';

type Awaitable<T> = T | Promise<T>;

/** What the pool tests do with a queue besides handing it to a pool, on either backend. */
export interface PoolTestQueue extends PoolQueue {
  submit(type: string, payload?: string | null, priorityOrOptions?: number | SubmitOptions, runAtMillis?: number): Awaitable<string>;
  view(jobId: string): Awaitable<JobView>;
  logs(jobId: string): Awaitable<JobLogs>;
  cancel(jobId: string): Awaitable<void>;
  stats(): Awaitable<QueueStats>;
  close(): Awaitable<void>;
}

export interface PoolBackend {
  name: string;
  open(policy: RetryPolicy): Promise<PoolTestQueue>;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const memory: PoolBackend = {
  name: 'memory',
  async open(policy) {
    return trackQueue(new JobQueue(systemClock, policy));
  },
};

const journal: PoolBackend = {
  name: 'journal',
  async open(policy) {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-pool-journal-'));
    dirs.push(dir);
    return trackQueue(JobQueue.open(join(dir, 'queue.db'), systemClock, policy));
  },
};

let names = 0;

const redis: PoolBackend = {
  name: 'redis',
  async open(policy) {
    const { url } = await fileRedis();
    return trackQueue(await RedisJobQueue.connect({ redis: url, name: `pool-backend-${process.pid}-${++names}`, policy, time: systemClock }));
  },
};

const redisPartitioned: PoolBackend = {
  name: 'redis-partitioned',
  async open(policy) {
    const { url } = await fileRedis();
    return trackQueue(await PartitionedRedisQueue.connect({ redis: url, name: `pool-backend-${process.pid}-${++names}`, policy, time: systemClock, partitions: 3 }));
  },
};

/** `describe(title [backend], body)` for memory, journal, Redis and partitioned Redis. */
export function describePoolBackends(title: string, body: (backend: PoolBackend) => void): void {
  for (const backend of [memory, journal]) describe(`${title} [${backend.name}]`, () => body(backend));
  for (const backend of [redis, redisPartitioned]) describeRedis(`${title} [${backend.name}]`, () => body(backend));
}

/** A queue of `backend` and a started pool on it (handlers: pool-handlers.mjs), with a scratch directory for the handlers' log. */
export async function startPool(
  backend: PoolBackend, policy: RetryPolicy, options: Omit<WorkerPoolOptions, 'handlers'>,
): Promise<{ s: Scratch; queue: PoolTestQueue; pool: WorkerPool<PoolTestQueue> }> {
  const s = scratch();
  const queue = await backend.open(policy);
  const pool = track(new WorkerPool(queue, { handlers: HANDLERS, ...options }));
  await pool.start();
  return { s, queue, pool };
}
