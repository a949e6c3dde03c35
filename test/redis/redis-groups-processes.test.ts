/**
 * Group caps racing across PROCESSES, on Redis and on a
 * PartitionedRedisQueue: three processes poll batches, hold leases, complete
 * most and abandon some (which expire when the clock moves on). Each logs
 * every claim with the count of its group's RUNNING jobs in Redis, taken
 * atomically right after the poll (support/redis-cap-race.ts). No count
 * may ever pass its group's cap, and every job must still get done: a place
 * lost to a move that did not count itself out (an expiry, say) would stall
 * its group for good, and the rounds would run out.
 */
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0 } from '../support/helpers.js';
import { killRacers, mostRunning, raceInProcesses, type RaceTarget } from '../support/redis-cap-race.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const JOBS_PER_GROUP = 40;

afterEach(killRacers);

/** Each group's cap (C: none). */
const CAPS: Record<string, number> = { A: 2, B: 3 };

async function race(queue: RedisJobQueue | PartitionedRedisQueue, clock: ManualClock, target: RaceTarget): Promise<void> {
  for (const [group, max] of Object.entries(CAPS)) await queue.setGroupConcurrency(group, max);
  // The payload names the group, for the racers' log. One submit each: a partitioned queue spreads them over its partitions.
  for (const group of ['A', 'B', 'C']) {
    for (let i = 0; i < JOBS_PER_GROUP; i++) await queue.submit('t', group, { group });
  }
  const { claims, abandoned, rounds } = await raceInProcesses(queue, clock, target, 'group', 2_000);
  const most = mostRunning(claims).byValue;
  console.log(`[group caps, processes${target.partitions > 0 ? `, ${target.partitions} partitions` : ''}] ${claims.length} claims (${abandoned} abandoned) in ${rounds} rounds; most RUNNING of a group at a claim: ${JSON.stringify(most)}; caps ${JSON.stringify(CAPS)}`);
  // Every claim, checked: its group's RUNNING jobs, counted right after the poll that made it, within the cap.
  const over = claims.filter(([, group, count]) => CAPS[group] !== undefined && count > CAPS[group]!);
  expect(over).toEqual([]);
  // The race pressed on the caps: each capped group was at its cap at some claim, and the uncapped one went past them.
  expect(most).toMatchObject({ A: CAPS['A'], B: CAPS['B'] });
  expect(most['C']).toBeGreaterThan(CAPS['B']!);
  expect(abandoned).toBeGreaterThan(0);
  const stats = await queue.stats();
  expect(stats.pending + stats.running).toBe(0);
  expect(stats.succeeded + stats.dead).toBe(3 * JOBS_PER_GROUP);
}

let names = 0;

describeRedis('group caps racing in other processes', () => {
  it('on a RedisJobQueue: never more RUNNING of a group than its cap, and every job done', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const name = `groups-${process.pid}-${++names}`;
    const queue = await RedisJobQueue.connect({ redis: server.url, name, time: clock, policy: new RetryPolicy(5, 0, 0) });
    try {
      await race(queue, clock, { url: server.url, name, partitions: 0 });
    } finally {
      await queue.close();
    }
  }, 180_000);

  it('on a PartitionedRedisQueue of 2 partitions: the shares add up to the caps, never passed', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const name = `groups-p-${process.pid}-${++names}`;
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name, partitions: 2, time: clock, policy: new RetryPolicy(5, 0, 0) });
    try {
      await race(queue, clock, { url: server.url, name, partitions: 2 });
    } finally {
      await queue.close();
    }
  }, 180_000);
});
