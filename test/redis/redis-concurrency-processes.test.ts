/**
 * Concurrency caps racing across PROCESSES, on Redis and on a
 * PartitionedRedisQueue: three processes poll batches, hold leases, complete
 * most and abandon some (which expire when the clock moves on), while every
 * poll is followed by an atomic count of the jobs RUNNING in Redis
 * (support/redis-cap-race.ts). No count at any claim may pass a cap, and
 * every job must still get done: a place lost to a move that did not count
 * itself out (an expiry, say) would stall its type for good, and the rounds
 * would run out.
 */
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0 } from '../support/helpers.js';
import { killRacers, mostRunning, raceInProcesses, type RaceTarget } from '../support/redis-cap-race.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const JOBS_PER_TYPE = 40;

afterEach(killRacers);

interface Caps {
  queue: number;
  a: number;
  b: number;
}

async function race(queue: RedisJobQueue | PartitionedRedisQueue, clock: ManualClock, target: RaceTarget, caps: Caps): Promise<void> {
  await queue.setConcurrency(caps.queue);
  await queue.setConcurrency('a', caps.a);
  await queue.setConcurrency('b', caps.b);
  // The payload names the type, for the racers' log.
  for (const type of ['a', 'b', 'c']) {
    for (let i = 0; i < JOBS_PER_TYPE; i++) await queue.submit(type, type);
  }
  const { claims, abandoned, rounds } = await raceInProcesses(queue, clock, target, 'type', 1_000);
  const most = mostRunning(claims);
  console.log(`[caps, processes${target.partitions > 0 ? `, ${target.partitions} partitions` : ''}] ${claims.length} claims (${abandoned} abandoned) in ${rounds} rounds; most RUNNING at a claim: ${JSON.stringify(most)}; caps ${JSON.stringify(caps)}`);
  // Every claim, checked: the RUNNING jobs counted right after the poll that made it, within the caps.
  expect(claims.filter(([, , , total]) => total > caps.queue)).toEqual([]);
  expect(claims.filter(([, type, count]) => (type === 'a' && count > caps.a) || (type === 'b' && count > caps.b))).toEqual([]);
  // The race pressed on the caps: the queue's was reached.
  expect(most.total).toBe(caps.queue);
  expect(abandoned).toBeGreaterThan(0);
  const stats = await queue.stats();
  expect(stats.pending + stats.running).toBe(0);
  expect(stats.succeeded + stats.dead).toBe(3 * JOBS_PER_TYPE);
}

let names = 0;

describeRedis('concurrency caps racing in other processes', () => {
  it('on a RedisJobQueue: never more RUNNING than a cap, and every job done', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const name = `caps-${process.pid}-${++names}`;
    const queue = await RedisJobQueue.connect({ redis: server.url, name, time: clock, policy: new RetryPolicy(5, 0, 0) });
    try {
      await race(queue, clock, { url: server.url, name, partitions: 0 }, { queue: 4, a: 2, b: 3 });
    } finally {
      await queue.close();
    }
  }, 180_000);

  it('on a PartitionedRedisQueue of 3 partitions: the shares add up to the caps, never passed', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const name = `caps-p-${process.pid}-${++names}`;
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name, partitions: 3, time: clock, policy: new RetryPolicy(5, 0, 0) });
    try {
      await race(queue, clock, { url: server.url, name, partitions: 3 }, { queue: 6, a: 3, b: 4 });
    } finally {
      await queue.close();
    }
  }, 180_000);
});
