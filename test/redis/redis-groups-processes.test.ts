/**
 * Group caps racing across PROCESSES, on Redis and on a
 * PartitionedRedisQueue: three processes poll batches, hold leases, complete
 * most and abandon some (which expire when the clock moves on). Each logs
 * every claim with the count of its group's RUNNING jobs in Redis, taken
 * atomically right after the poll (fixtures/redis-group-racer.mjs). No count
 * may ever pass its group's cap, and every job must still get done: a place
 * lost to a move that did not count itself out (an expiry, say) would stall
 * its group for good, and the rounds would run out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0, withTimeout } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const RACER = fileURLToPath(new URL('../fixtures/redis-group-racer.mjs', import.meta.url));
const PROCESSES = 3;
const JOBS_PER_GROUP = 40;
const LEASE = 60_000;
/** Rounds enough for every job, with room to spare: each round leases every job it can. */
const MAX_ROUNDS = 60;

/** A claim as a racer logs it: the job, its group, its group's RUNNING jobs and all RUNNING jobs right after the poll. */
type Claim = [jobId: string, group: string, runningOfGroup: number, runningTotal: number];

interface Round {
  ev: string;
  claims: Claim[];
  abandoned: number;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** A racing process (see the fixture), answering one JSON line per `go`. */
function racer(target: { url: string; name: string; partitions: number }, index: number): { go(time: number): Promise<Round>; close(): void } {
  const child = spawn(process.execPath, [RACER, JSON.stringify(target), `r${index}`, String(2_000 + index)], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Round> => {
    const { value, done } = await withTimeout(lines.next(), 60_000, `racer r${index}`);
    if (done === true) throw new Error(`racer r${index} ended`);
    return JSON.parse(value as string) as Round;
  };
  const ready = next();
  return {
    async go(time) {
      expect((await ready).ev).toBe('ready');
      child.stdin!.write(`go ${time}\n`);
      return next();
    },
    close: () => child.stdin!.end('close\n'),
  };
}

/** Each group's cap (C: none). */
const CAPS: Record<string, number> = { A: 2, B: 3 };

async function race(queue: RedisJobQueue | PartitionedRedisQueue, clock: ManualClock, target: { url: string; name: string; partitions: number }): Promise<void> {
  for (const [group, max] of Object.entries(CAPS)) await queue.setGroupConcurrency(group, max);
  // The payload names the group, for the racers' log. One submit each: a partitioned queue spreads them over its partitions.
  for (const group of ['A', 'B', 'C']) {
    for (let i = 0; i < JOBS_PER_GROUP; i++) await queue.submit('t', group, { group });
  }
  const racers = Array.from({ length: PROCESSES }, (_, i) => racer(target, i));
  const claims: Claim[] = [];
  let abandoned = 0;
  let rounds = 0;
  for (; rounds < MAX_ROUNDS; rounds++) {
    const reports = await Promise.all(racers.map((r) => r.go(clock.now())));
    for (const report of reports) {
      claims.push(...report.claims);
      abandoned += report.abandoned;
    }
    const stats = await queue.stats();
    if (stats.pending + stats.running === 0) break;
    // The abandoned leases expire: their jobs are retried (or dead after 5 attempts) in the next round.
    clock.advance(LEASE);
  }
  for (const r of racers) r.close();
  const most: Record<string, number> = {};
  for (const [, group, count] of claims) most[group] = Math.max(most[group] ?? 0, count);
  console.log(`[group caps, processes${target.partitions > 0 ? `, ${target.partitions} partitions` : ''}] ${claims.length} claims (${abandoned} abandoned) in ${rounds + 1} rounds; most RUNNING of a group at a claim: ${JSON.stringify(most)}; caps ${JSON.stringify(CAPS)}`);
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
