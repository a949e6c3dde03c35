/**
 * Concurrency caps racing across PROCESSES, on Redis and on a
 * PartitionedRedisQueue: three processes poll batches, hold leases, complete
 * most and abandon some (which expire when the clock moves on), while every
 * poll is followed by an atomic count of the jobs RUNNING in Redis. No count
 * may ever pass a cap, and every job must still get done: a place lost to a
 * move that did not count itself out (an expiry, say) would stall its type
 * for good, and the rounds would run out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0, withTimeout } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const RACER = fileURLToPath(new URL('../fixtures/redis-caps-racer.mjs', import.meta.url));
const PROCESSES = 3;
const JOBS_PER_TYPE = 40;
const LEASE = 60_000;
/** Rounds enough for every job, with room to spare: each round leases every job it can. */
const MAX_ROUNDS = 60;

interface Round {
  ev: string;
  claims: number;
  abandoned: number;
  most: { total: number; byType: Record<string, number> };
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** A racing process (see the fixture), answering one JSON line per `go`. */
function racer(target: { url: string; name: string; partitions: number }, index: number): { go(time: number): Promise<Round>; close(): void } {
  const child = spawn(process.execPath, [RACER, JSON.stringify(target), `r${index}`, String(1_000 + index)], { stdio: ['pipe', 'pipe', 'inherit'] });
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

interface Caps {
  queue: number;
  a: number;
  b: number;
}

async function race(queue: RedisJobQueue | PartitionedRedisQueue, clock: ManualClock, target: { url: string; name: string; partitions: number }, caps: Caps): Promise<void> {
  await queue.setConcurrency(caps.queue);
  await queue.setConcurrency('a', caps.a);
  await queue.setConcurrency('b', caps.b);
  for (const type of ['a', 'b', 'c']) {
    for (let i = 0; i < JOBS_PER_TYPE; i++) await queue.submit(type, `${type}${i}`);
  }
  const racers = Array.from({ length: PROCESSES }, (_, i) => racer(target, i));
  const most = { total: 0, a: 0, b: 0 };
  let claims = 0;
  let abandoned = 0;
  let rounds = 0;
  for (; rounds < MAX_ROUNDS; rounds++) {
    const reports = await Promise.all(racers.map((r) => r.go(clock.now())));
    for (const report of reports) {
      claims += report.claims;
      abandoned += report.abandoned;
      most.total = Math.max(most.total, report.most.total);
      most.a = Math.max(most.a, report.most.byType['a'] ?? 0);
      most.b = Math.max(most.b, report.most.byType['b'] ?? 0);
    }
    const stats = await queue.stats();
    if (stats.pending + stats.running === 0) break;
    // The abandoned leases expire: their jobs are retried (or dead after 5 attempts) in the next round.
    clock.advance(LEASE);
  }
  for (const r of racers) r.close();
  console.log(`[caps, processes${target.partitions > 0 ? `, ${target.partitions} partitions` : ''}] ${claims} claims (${abandoned} abandoned) in ${rounds + 1} rounds; most RUNNING at once: ${JSON.stringify(most)}; caps ${JSON.stringify(caps)}`);
  expect(most.total).toBeLessThanOrEqual(caps.queue);
  expect(most.a).toBeLessThanOrEqual(caps.a);
  expect(most.b).toBeLessThanOrEqual(caps.b);
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
