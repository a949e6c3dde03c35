/**
 * Concurrency caps on Redis beyond the contract (test/contract/concurrency.test.ts):
 * they are the queue's, in Redis (every client obeys them, one connecting
 * later lists them, a restart of Redis keeps them); a batch is capped inside
 * its one script; a cap set while jobs run counts them; a queue without caps
 * keeps none of their keys; and the partitioned queue's shares.
 */
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0, expectInvalid, mustPoll, withTimeout } from '../support/helpers.js';
import { describeRedis, fileRedis, startRedis } from '../support/redis-harness.js';

const LEASE = 1_000;
let names = 0;

describeRedis('concurrency caps on Redis', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  const connect = async (name: string, clock: ManualClock, url?: string) => {
    const queue = await RedisJobQueue.connect({ redis: url ?? (await fileRedis()).url, name, policy: new RetryPolicy(5, 0, 0), time: clock });
    opened.push(queue);
    return queue;
  };
  const fresh = () => `caps-${process.pid}-${++names}`;

  it('are the queue\'s: another client obeys them, a later one lists them, and a restart of Redis keeps them', async () => {
    const server = await startRedis();
    try {
      const name = fresh();
      const clock = new ManualClock(T0);
      const a = await connect(name, clock, server.url);
      const b = await connect(name, clock, server.url);
      await a.setConcurrency('email', 1);
      await a.setConcurrency(3);
      for (let i = 0; i < 3; i++) await b.submit('email', `e${i}`);
      const first = await mustPoll(b);
      expect(await a.poll('w', LEASE)).toBeUndefined();
      await server.restart();
      const late = await connect(name, clock, server.url);
      expect(await late.concurrencyCaps()).toEqual({ queue: 3, types: [{ type: 'email', max: 1 }] });
      expect(await late.poll('w', LEASE)).toBeUndefined();
      await late.complete(first.jobId, first.token);
      expect(await late.poll('w', LEASE)).toBeDefined();
      expect(await late.poll('w', LEASE)).toBeUndefined();
    } finally {
      await Promise.all(opened.splice(0).map((queue) => queue.close()));
      await server.stop();
    }
  });

  it('caps a batch inside its one script: pollMany and completeManyAndPoll lease no more than the caps allow', async () => {
    const clock = new ManualClock(T0);
    const queue = await connect(fresh(), clock);
    await queue.setConcurrency('a', 2);
    await queue.setConcurrency(5);
    for (let i = 0; i < 6; i++) await queue.submit('a');
    for (let i = 0; i < 6; i++) await queue.submit('b');
    const batch = await queue.pollMany('w', LEASE, 10);
    expect(batch.filter((lease) => lease.type === 'a')).toHaveLength(2);
    expect(batch).toHaveLength(5);
    const { leases } = await queue.completeManyAndPoll(batch.slice(0, 3).map(({ jobId, token }) => ({ jobId, token })), 'w', LEASE, 10);
    expect(leases).toHaveLength(3);
    expect((await queue.stats()).running).toBe(5);
  });

  it('counts the jobs of a type already RUNNING when its cap is set', async () => {
    const clock = new ManualClock(T0);
    const queue = await connect(fresh(), clock);
    for (let i = 0; i < 4; i++) await queue.submit('a');
    await queue.submit('b');
    const running = [await mustPoll(queue), await mustPoll(queue)];
    await queue.setConcurrency('a', 3);
    expect((await queue.pollMany('w', LEASE, 5)).map((lease) => lease.type).sort()).toEqual(['a', 'b']);
    await queue.complete(running[0]!.jobId, running[0]!.token);
    expect((await mustPoll(queue)).type).toBe('a');
  });

  it('wakes a client waiting for work once a place frees under a reached cap', async () => {
    for (const scope of ['queue', 'type'] as const) {
      const clock = new ManualClock(T0);
      const queue = await connect(fresh(), clock);
      const other = await connect(fresh(), clock);
      if (scope === 'queue') await queue.setConcurrency(1);
      else await queue.setConcurrency('a', 1);
      await queue.submit('a');
      await queue.submit('a');
      const lease = await mustPoll(queue);
      expect(await queue.poll('w', LEASE)).toBeUndefined();
      const waiting = queue.waitForWork(600_000);
      // A move on another queue wakes no one here; the complete below does.
      await other.submit('a');
      await queue.complete(lease.jobId, lease.token);
      expect(await withTimeout(waiting, 10_000, `waitForWork (${scope} cap)`)).toBe(true);
      expect(await queue.poll('w', LEASE)).toBeDefined();
    }
  });

  it('keeps a waiting job out of the way while the clock goes back, and leases it once due again', async () => {
    const clock = new ManualClock(T0);
    const queue = await connect(fresh(), clock);
    await queue.setConcurrency('a', 1);
    const first = await queue.submit('a');
    const waiting = await queue.submit('a', 'w', 0, T0 + 10);
    clock.advance(10);
    const lease = await mustPoll(queue, first);
    expect(await queue.poll('w', LEASE)).toBeUndefined();
    clock.set(T0);
    expect(await queue.stats()).toMatchObject({ ready: 0, delayed: 1 });
    await queue.complete(lease.jobId, lease.token);
    clock.set(T0 + 10);
    expect((await queue.stats()).ready).toBe(1);
    expect((await queue.poll('w', LEASE))?.jobId).toBe(waiting);
  });

  it('leaves no trace on a queue that never had a cap, and clears its flag once the last cap is gone', async () => {
    const server = await fileRedis();
    const redis = new Redis(server.url);
    try {
      const name = fresh();
      const clock = new ManualClock(T0);
      const queue = await connect(name, clock);
      const key = (suffix: string) => `leasehold:{${name}}:${suffix}`;
      for (let i = 0; i < 3; i++) await queue.submit('a');
      const lease = await mustPoll(queue);
      await queue.complete(lease.jobId, lease.token);
      expect(await redis.hmget(key('state'), 'capped', 'queueCap')).toEqual([null, null]);
      expect(await redis.exists(key('caps'), key('running'), key('parkedTypes'))).toBe(0);
      await queue.setConcurrency('a', 1);
      await queue.setConcurrency(2);
      expect(await redis.hmget(key('state'), 'capped', 'queueCap')).toEqual(['1', '2']);
      await mustPoll(queue);
      // Passed over at its cap: parked.
      expect(await queue.poll('w', LEASE)).toBeUndefined();
      expect(await redis.smembers(key('parkedTypes'))).toEqual(['a']);
      await queue.setConcurrency('a', null);
      await queue.setConcurrency(null);
      // The parked job is leased in its place; then nothing of the caps is left, and polls take the fast path again.
      expect(await queue.poll('w', LEASE)).toBeDefined();
      expect(await redis.hmget(key('state'), 'capped', 'queueCap')).toEqual([null, null]);
      expect(await redis.exists(key('caps'), key('running'), key('parkedTypes'), key('parked:a'))).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describeRedis('concurrency caps on a partitioned Redis queue', () => {
  it('refuses a cap smaller than the partition count, changing nothing, and lists the shares added up', async () => {
    const server = await fileRedis();
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name: `caps-p-${process.pid}-${++names}`, partitions: 3, time: new ManualClock(T0), policy: new RetryPolicy(5, 0, 0) });
    try {
      await queue.setConcurrency('a', 7);
      expect((await expectInvalid(() => queue.setConcurrency('a', 2))).message).toMatch(/at least the 3 partitions/);
      expect((await expectInvalid(() => queue.setConcurrency(1))).message).toMatch(/at least the 3 partitions/);
      expect(await queue.concurrencyCaps()).toEqual({ queue: null, types: [{ type: 'a', max: 7 }] });
      // Shares 3, 2, 2: partition 0 (the first 3 jobs there) leases 3 at most.
      for (let i = 0; i < 9; i++) await queue.submit('a');
      expect(await queue.pollMany('w', LEASE, 20)).toHaveLength(7);
      expect(await queue.poll('w', LEASE)).toBeUndefined();
    } finally {
      await queue.close();
    }
  });
});
