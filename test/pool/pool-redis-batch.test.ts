/**
 * A WorkerPool with `concurrency` > 1 on Redis claims and completes in
 * batches (pollMany, completeManyAndPoll): far fewer scripts than jobs, as
 * Redis's own INFO commandstats counts them, while every job still runs
 * once per attempt with its attempts exact. On a RedisJobQueue and on a
 * PartitionedRedisQueue alike. Handlers log into a scratch directory; the
 * test waits on the log and the queue's counts, never on time.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PartitionedRedisQueue, RedisJobQueue, RetryPolicy, WorkerPool, systemClock, type RedisQueueOptions } from '../../dist/index.js';
import { pause } from '../support/helpers.js';
import { HANDLERS, counts, scratch, track, trackQueue } from '../support/pool-harness.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

type TestQueue = RedisJobQueue | PartitionedRedisQueue;

const SHAPES: ReadonlyArray<{ name: string; partitions: number; connect(options: RedisQueueOptions): Promise<TestQueue> }> = [
  { name: 'a RedisJobQueue', partitions: 1, connect: (options) => RedisJobQueue.connect(options) },
  { name: 'a PartitionedRedisQueue of 3 partitions', partitions: 3, connect: (options) => PartitionedRedisQueue.connect({ ...options, partitions: 3 }) },
];

let admin: Redis | undefined;
let names = 0;

/** Script calls (EVAL, EVALSHA, FCALL) Redis served since the last CONFIG RESETSTAT. */
async function scriptCalls(): Promise<number> {
  let calls = 0;
  for (const match of (await admin!.info('commandstats')).matchAll(/^cmdstat_(?:eval|evalsha|fcall):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

/** Polls the queue's counts (each poll `cost` scripts) until `done` holds; returns how many scripts the polling itself ran. */
async function waitForCounts(queue: TestQueue, cost: number, done: (stats: Awaited<ReturnType<TestQueue['stats']>>) => boolean): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (let own = cost; ; own += cost) {
    const stats = await queue.stats();
    if (done(stats)) return own;
    if (Date.now() > deadline) throw new Error(`the queue never settled: ${JSON.stringify(stats)}`);
    await pause(20);
  }
}

for (const shape of SHAPES) describeRedis(`WorkerPool batches on ${shape.name}`, () => {
  beforeAll(async () => {
    admin = new Redis((await fileRedis()).url, { lazyConnect: true });
    await admin.connect();
  });
  afterAll(() => admin?.disconnect());

  const open = async (maxAttempts: number): Promise<TestQueue> => trackQueue(await shape.connect({
    redis: (await fileRedis()).url, name: `pool-batch-${process.pid}-${++names}`, policy: new RetryPolicy(maxAttempts, 0, 0), time: systemClock,
  }));

  it('claims and completes many jobs per script when concurrency > 1: fewer than one script per two jobs, each job run once', { timeout: 60_000 }, async () => {
    const s = scratch();
    const queue = await open(1);
    const jobs = 1_600;
    const ids: string[] = [];
    for (let n = 0; n < jobs; n += 400) {
      ids.push(...(await queue.submitMany(Array.from({ length: 400 }, (_, i) => ({ type: 'noop', payload: s.payload({ n: n + i }) })))));
    }
    await admin!.config('RESETSTAT');
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, concurrency: 16, leaseMillis: 30_000 }));
    await pool.start();
    const own = await waitForCounts(queue, shape.partitions, (stats) => stats.succeeded === jobs);
    const scripts = (await scriptCalls()) - own;
    await pool.close();

    // One complete per job (completeAndPoll) would be at least `jobs` scripts; batches of up to 16 make about jobs / 16 (per partition visited).
    expect(scripts, `${scripts} scripts for ${jobs} jobs`).toBeLessThan(jobs / 2);
    const runs = counts(s.events('ok').map((line) => line.n as number));
    expect([...runs].filter(([, times]) => times !== 1), 'payloads run other than exactly once').toEqual([]);
    expect(runs.size).toBe(jobs);
    const views = await Promise.all(ids.map((id) => queue.view(id)));
    expect(views.filter((view) => view.status !== 'SUCCEEDED' || view.attempts !== 1), 'jobs not SUCCEEDED at their first attempt').toEqual([]);
  });

  it('keeps attempts exact per job inside batches: retries and dead letters among jobs that succeed at once', { timeout: 60_000 }, async () => {
    const s = scratch();
    const maxAttempts = 3;
    const queue = await open(maxAttempts);
    const noops = await queue.submitMany(Array.from({ length: 300 }, (_, n) => ({ type: 'noop', payload: s.payload({ n }) })));
    const flaky = await queue.submitMany(Array.from({ length: 20 }, () => ({ type: 'flaky', payload: s.payload({ succeedOn: 2 }) })));
    const failing = await queue.submitMany(Array.from({ length: 5 }, () => ({ type: 'alwaysFails', payload: s.payload() })));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, concurrency: 8, leaseMillis: 30_000 }));
    await pool.start();
    await waitForCounts(queue, shape.partitions, (stats) => stats.pending + stats.running === 0);
    await pool.close();

    const view = (ids: readonly string[]) => Promise.all(ids.map((id) => queue.view(id)));
    expect((await view(noops)).filter((v) => v.status !== 'SUCCEEDED' || v.attempts !== 1)).toEqual([]);
    expect((await view(flaky)).filter((v) => v.status !== 'SUCCEEDED' || v.attempts !== 2 || v.lastError !== 'flaky attempt 1')).toEqual([]);
    expect((await view(failing)).filter((v) => v.status !== 'DEAD' || v.attempts !== maxAttempts)).toEqual([]);
    for (const id of failing) expect(s.events('start', id).map((line) => line.attempt)).toEqual([1, 2, 3]);
    expect(counts(s.events('ok').map((line) => line.jobId)).size).toBe(noops.length + flaky.length);
    expect(await pool.stats()).toMatchObject({ succeeded: 320, dead: 5, refused: 0, restarts: 0 });
  });
});
