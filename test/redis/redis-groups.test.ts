/**
 * Groups on Redis beyond the contract (test/contract/groups.test.ts): the
 * groups, caps and turns are the queue's, in Redis (another client obeys
 * them, a restart of Redis keeps them); a queue that never names a group
 * keeps none of their keys and files its jobs as before; the first group
 * named gives the jobs already ready, held or parked their turns in the
 * order they had; and the partitioned queue's shares.
 */
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import type { Payload } from '../../dist/index.js';
import { T0, expectInvalid, mustPoll } from '../support/helpers.js';
import { describeRedis, fileRedis, startRedis } from '../support/redis-harness.js';

const LEASE = 60_000;
let names = 0;
const fresh = () => `groups-${process.pid}-${++names}`;

describeRedis('groups on Redis', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  const connect = async (name: string, clock: ManualClock, url?: string) => {
    const queue = await RedisJobQueue.connect({ redis: url ?? (await fileRedis()).url, name, policy: new RetryPolicy(5, 0, 0), time: clock });
    opened.push(queue);
    return queue;
  };
  const payloads = async (queue: RedisJobQueue, count: number) => {
    const polled: (Payload | undefined)[] = [];
    for (let i = 0; i < count; i++) polled.push((await queue.poll('w', LEASE))?.payload);
    return polled;
  };

  it('retry leases that expired at one instant in job order, as the shared-memory queue does (not the index\'s text order)', async () => {
    const clock = new ManualClock(T0);
    const queue = await connect(fresh(), clock);
    // J1..J12, so that text order would put J10 before J2.
    await queue.submitMany(Array.from({ length: 12 }, (_, i) => ({ type: 't', payload: `A${i}`, group: 'A' })));
    for (let i = 0; i < 12; i++) expect((await queue.poll('w', 10))?.payload).toBe(`A${i}`);
    clock.advance(30);
    expect(await payloads(queue, 13)).toEqual([...Array.from({ length: 12 }, (_, i) => `A${i}`), undefined]);
  });

  it('are the queue\'s: another client obeys them, and a restart of Redis keeps the groups, caps and turns', async () => {
    const server = await startRedis();
    try {
      const name = fresh();
      const clock = new ManualClock(T0);
      const a = await connect(name, clock, server.url);
      const b = await connect(name, clock, server.url);
      await a.setGroupConcurrency('A', 1);
      await b.submitMany(Array.from({ length: 20 }, (_, i) => ({ type: 't', payload: `A${i}`, group: 'A' })));
      await b.submitMany(Array.from({ length: 20 }, (_, i) => ({ type: 't', payload: `B${i}`, group: 'B' })));
      const running = await mustPoll(b);
      expect(running.payload).toBe('A0');
      // A1 waits at A's cap with its turn (2): B goes on.
      expect(await payloads(a, 3)).toEqual(['B0', 'B1', 'B2']);
      await server.restart();
      const late = await connect(name, clock, server.url);
      expect(await late.groupConcurrencyCaps()).toEqual([{ group: 'A', max: 1 }]);
      expect((await late.view(running.jobId)).group).toBe('A');
      expect(await late.poll('w', LEASE).then((lease) => lease?.payload)).toBe('B3');
      await late.complete(running.jobId, running.token);
      // A1 kept its turn across the restart: first once A has room. C starts at the current round, not behind.
      await late.submit('t', 'C0', { group: 'C' });
      expect(await payloads(late, 3)).toEqual(['A1', 'B4', 'C0']);
    } finally {
      await Promise.all(opened.splice(0).map((queue) => queue.close()));
      await server.stop();
    }
  });

  it('leave no trace on a queue that never names a group: its data model, keys and ready order are as before', async () => {
    const server = await fileRedis();
    const redis = new Redis(server.url);
    try {
      const name = fresh();
      const clock = new ManualClock(T0);
      const queue = await connect(name, clock);
      const key = (suffix: string) => `leasehold:{${name}}:${suffix}`;
      await queue.submit('t', 'late', 0, T0 - 5);
      const early = await queue.submit('t', 'early', 0, T0 - 10);
      await queue.setGroupConcurrency('never-named', null);
      // The usual order (runAt, then submission): no turns.
      expect(await payloads(queue, 2)).toEqual(['early', 'late']);
      expect(await redis.hget(key('state'), 'version')).toBe('2');
      expect(await redis.exists(key('turns'), key('groupCaps'), key('groupRunning'), key('parkedGroups'))).toBe(0);
      expect(await redis.hexists(key(`job:${early.slice(1)}`), 'turn')).toBe(0);
      // The first group named makes groups take turns, for the rest of the queue's life.
      await queue.submit('t', 'grouped', { group: 'G' });
      expect(await redis.hget(key('state'), 'version')).toBe('3');
      expect(await redis.hgetall(key('turns'))).not.toEqual({});
    } finally {
      redis.disconnect();
    }
  });

  it('do not start turns on a submit refused for room: the queue keeps its usual order', async () => {
    const clock = new ManualClock(T0);
    const queue = await RedisJobQueue.connect({ redis: (await fileRedis()).url, name: fresh(), policy: new RetryPolicy(5, 0, 0), time: clock, capacity: 3 });
    opened.push(queue);
    for (const at of [1, 2, 3]) await queue.submit('t', `x${at}`, 0, T0 - at);
    await expect(queue.submit('t', 'grouped', { group: 'A' })).rejects.toMatchObject({ code: 'ERR_QUEUE_FULL' });
    const first = (await queue.poll('w', LEASE))!;
    expect(first.payload).toBe('x3');
    await queue.complete(first.jobId, first.token);
    await queue.submit('t', 'x4', 0, T0 - 4);
    // The usual order (runAt first): with turns, x4 would wait its turn behind x2 and x1.
    expect(await payloads(queue, 3)).toEqual(['x4', 'x2', 'x1']);
  });

  it('give the jobs already ready, held or parked their turns in the order they had when the first group is named', async () => {
    const clock = new ManualClock(T0);
    const queue = await connect(fresh(), clock);
    // A type at its cap parks p2; a rate limit holds h2 (its window used by h1).
    await queue.setConcurrency('p', 1);
    await queue.submit('p', 'p1', 0, T0 - 4);
    await queue.submit('p', 'p2', 0, T0 - 3);
    await queue.setRateLimit('h', { max: 1, windowMillis: 1_000 });
    await queue.submit('h', 'h1', 0, T0 - 6);
    await queue.submit('h', 'h2', 0, T0 - 5);
    const h1 = (await queue.poll('w', LEASE))!;
    const p1 = (await queue.poll('w', LEASE))!;
    expect([h1.payload, p1.payload, await queue.poll('w', LEASE)]).toEqual(['h1', 'p1', undefined]);
    // Ready by runAt: u2 first of all, u1 between h2 and p2.
    await queue.submit('t', 'u1', 0, T0 - 4);
    await queue.submit('t', 'u2', 0, T0 - 7);
    // p2 is parked and h2 held now; u2 and u1 ready. Then the queue's first group:
    await queue.submitMany([{ type: 't', payload: 'G0', group: 'G' }, { type: 't', payload: 'G1', group: 'G' }]);
    await queue.complete(p1.jobId, p1.token);
    clock.advance(1_000);
    // The ungrouped jobs took turns 1..4 in their order (u2, h2, u1, p2), G's 1 and 2: one each per round.
    expect(await payloads(queue, 7)).toEqual(['u2', 'G0', 'h2', 'G1', 'u1', 'p2', undefined]);
  });

  /** A queue of a fresh name holding `count` ready jobs without a group (payloads u0, u1, ...), and a plain client of its Redis to read its keys. */
  const ungroupedQueue = async (count: number) => {
    const server = await fileRedis();
    const admin = new Redis(server.url);
    opened.push({ close: async () => void admin.disconnect() });
    const name = fresh();
    const queue = await connect(name, new ManualClock(T0), server.url);
    for (let from = 0; from < count; from += 1_000) {
      await queue.submitMany(Array.from({ length: Math.min(1_000, count - from) }, (_, i) => ({ type: 't', payload: `u${from + i}` })));
    }
    return { queue, admin, key: (what: string) => `leasehold:{${name}}:${what}` };
  };

  it('give 5,000 jobs already ready their turns at most a catch-up batch (50) per script, before any call goes on', async () => {
    const { queue, admin, key } = await ungroupedQueue(5_000);
    await admin.config('RESETSTAT');
    await queue.submit('t', 'G0', { group: 'G' });
    const calls: Record<string, number> = {};
    for (const [, command, count] of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[command!] = Number(count);
    // One script per 50 jobs or more (the first group's submit stopped and was called again until all had their turns):
    // each job filed anew once (a ZADD), so no script filed more than its share.
    expect(calls.fcall).toBeGreaterThanOrEqual(5_000 / 50);
    expect((calls.zadd ?? 0) / calls.fcall!).toBeLessThanOrEqual(51);
    // Done: the grouped data model again, nothing left to walk; the old jobs took turns 1, 2, ... in their order.
    expect(await admin.hget(key('state'), 'version')).toBe('3');
    expect(await admin.exists(key('unturned'))).toBe(0);
    expect(await payloads(queue, 4)).toEqual(['u0', 'G0', 'u1', 'u2']);
    expect(await queue.stats()).toMatchObject({ pending: 4_997, running: 4 });
  });

  it('go on with a walk another client left midway (data model 11): the next call of any kind finishes it first', async () => {
    const { queue, admin, key } = await ungroupedQueue(120);
    // As startTurns leaves the queue: its ready index moved whole to `unturned`, the version saying so.
    await admin.rename(key('ready'), key('unturned'));
    await admin.hset(key('state'), 'version', '11');
    expect(await queue.stats()).toMatchObject({ pending: 120 });
    expect(await admin.hget(key('state'), 'version')).toBe('3');
    await queue.submit('t', 'G0', { group: 'G' });
    expect(await payloads(queue, 3)).toEqual(['u0', 'G0', 'u1']);
  });

  it('count a group\'s jobs already RUNNING when its cap is set', async () => {
    const clock = new ManualClock(T0);
    const queue = await connect(fresh(), clock);
    for (let i = 0; i < 4; i++) await queue.submit('t', `A${i}`, { group: 'A' });
    const first = await mustPoll(queue);
    await mustPoll(queue);
    await queue.setGroupConcurrency('A', 2);
    expect(await queue.poll('w', LEASE)).toBeUndefined();
    expect((await queue.stats()).pending).toBe(2);
    await queue.complete(first.jobId, first.token);
    expect(await payloads(queue, 2)).toEqual(['A2', undefined]);
  });

  it('wake a client waiting for work once a place frees under a group\'s cap', async () => {
    const clock = new ManualClock(T0);
    const name = fresh();
    const queue = await connect(name, clock);
    const other = await connect(name, clock);
    await queue.setGroupConcurrency('A', 1);
    await queue.submit('t', 'A0', { group: 'A' });
    await queue.submit('t', 'A1', { group: 'A' });
    const lease = await mustPoll(queue);
    expect(await queue.poll('w', LEASE)).toBeUndefined();
    const woken = queue.waitForWork(60_000);
    await other.complete(lease.jobId, lease.token);
    expect(await woken).toBe(true);
    expect((await queue.poll('w', LEASE))?.payload).toBe('A1');
  });
});

describeRedis('groups on a partitioned Redis queue', () => {
  it('take turns within each partition: 5 jobs of B submitted after 1,000 of A are leased within the first 12 polls', async () => {
    const clock = new ManualClock(T0);
    const queue = await PartitionedRedisQueue.connect({ redis: (await fileRedis()).url, name: fresh(), partitions: 2, time: clock, policy: new RetryPolicy(5, 0, 0) });
    try {
      // Each submitMany goes whole to the next partition: 500 of A in each.
      for (const half of [0, 1]) await queue.submitMany(Array.from({ length: 500 }, (_, i) => ({ type: 't', payload: `A${half * 500 + i}`, group: 'A' })));
      // Spread over the partitions: 3 in one, 2 in the other.
      for (let i = 0; i < 5; i++) await queue.submit('t', `B${i}`, { group: 'B' });
      const polled: Payload[] = [];
      for (let i = 0; i < 12; i++) polled.push((await queue.poll('w', LEASE))!.payload);
      // Polls visit the partitions in turn, and each serves A and B a job a round: B's 5 within 12 polls, not after A's 1,000.
      expect(polled.filter((p) => typeof p === 'string' && p.startsWith('B')).sort()).toEqual(['B0', 'B1', 'B2', 'B3', 'B4']);
    } finally {
      await queue.close();
    }
  });
});

describeRedis('group caps on a partitioned Redis queue', () => {
  it('refuse a cap smaller than the partition count, changing nothing, and list the shares added up', async () => {
    const clock = new ManualClock(T0);
    const queue = await PartitionedRedisQueue.connect({ redis: (await fileRedis()).url, name: fresh(), partitions: 3, time: clock, policy: new RetryPolicy(5, 0, 0) });
    try {
      await queue.setGroupConcurrency('A', 4);
      const error = await expectInvalid(() => queue.setGroupConcurrency('A', 2));
      expect(error.message).toMatch(/at least the 3 partitions/);
      expect(await queue.groupConcurrencyCaps()).toEqual([{ group: 'A', max: 4 }]);
      // Shares 2, 1, 1: one submit per partition in turn, three rounds.
      for (let i = 0; i < 9; i++) await queue.submit('t', `A${i}`, { group: 'A' });
      const leases = await queue.pollMany('w', LEASE, 9);
      expect(leases).toHaveLength(4);
      await queue.setGroupConcurrency('A', null);
      expect(await queue.groupConcurrencyCaps()).toEqual([]);
      expect(await queue.pollMany('w', LEASE, 9)).toHaveLength(5);
    } finally {
      await queue.close();
    }
  });
});
