/**
 * Calls behind the clock on Redis: clients' clocks and calls interleave, so a submit or a poll
 * often arrives with a now a little before the last call's. Such a call leaves the ready index
 * exact for the later clock (includes/call.lua, `behind`) instead of sweeping it back and forth,
 * and still takes only the jobs due by its own now, best first (leases.lua, takeReady).
 */
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0, mustPoll } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const LEASE = 1_000;
let names = 0;

describeRedis('calls behind the clock on Redis', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  /** Two clients of one fresh queue: `ahead` at T0 + 10, `behind` at T0, and a raw connection reading its ready index. */
  const clients = async () => {
    const server = await fileRedis();
    const name = `behind-${process.pid}-${++names}`;
    const connect = async (clock: ManualClock) => {
      const queue = await RedisJobQueue.connect({ redis: server.url, name, policy: new RetryPolicy(5, 0, 0), time: clock });
      opened.push(queue);
      return queue;
    };
    const raw = new Redis(server.url);
    opened.push({ close: async () => void raw.disconnect() });
    return { ahead: await connect(new ManualClock(T0 + 10)), behind: await connect(new ManualClock(T0)), ready: () => raw.zcard(`leasehold:{${name}}:ready`) };
  };

  it('passes over the jobs a later clock filed without taking them out of the ready index, and files its own', async () => {
    const { ahead, behind, ready } = await clients();
    const later = [await ahead.submit('a'), await ahead.submit('a')];
    expect(await behind.poll('w', LEASE)).toBeUndefined();
    expect(await ready()).toBe(2);
    const own = await behind.submit('a');
    expect(await ready()).toBe(3);
    expect((await mustPoll(behind, own)).jobId).toBe(own);
    expect(await behind.poll('w', LEASE)).toBeUndefined();
    expect((await ahead.pollMany('w', LEASE, 5)).map((lease) => lease.jobId)).toEqual(later);
  });

  it('leases a batch of the jobs due by its now only, the later ones left in place', async () => {
    const { ahead, behind, ready } = await clients();
    await ahead.submit('a');
    await ahead.submit('a');
    const own = [await behind.submit('a'), await behind.submit('a')];
    expect((await behind.pollMany('w', LEASE, 5)).map((lease) => lease.jobId)).toEqual(own);
    expect(await ready()).toBe(2);
  });

  it('takes a due job of a lower priority behind a higher one due only after its now', async () => {
    const { ahead, behind } = await clients();
    const high = await ahead.submit('a', 'high', 5);
    const low = await behind.submit('a', 'low', 0);
    expect((await mustPoll(behind, low)).jobId).toBe(low);
    expect(await behind.stats()).toMatchObject({ ready: 0, delayed: 1 });
    expect((await mustPoll(ahead, high)).jobId).toBe(high);
  });
});
