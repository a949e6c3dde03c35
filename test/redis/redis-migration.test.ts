/**
 * A queue of data model 1 (keys.ts: the catch-up's clock and sweep, the
 * pause and the wake counter in keys of their own, no state hash) is
 * converted in place by the first call of this leasehold that finds it, and
 * every job, lease, pause, rate limit, held job, listing set and catch-up in
 * progress carries over. Model 1 differs from model 2 only in those keys: the
 * tests write them as model 1 did, over a queue this leasehold filled.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { ManualClock, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0 } from '../support/helpers.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

const LEASE = 1_000;
let names = 0;

describeRedis('a Redis queue of data model 1', () => {
  let server: RedisServer;
  let admin: Redis;
  const opened: RedisJobQueue[] = [];
  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  const open = async (name: string, time: ManualClock) => {
    const queue = await RedisJobQueue.connect({ redis: server.url, name, policy: new RetryPolicy(3, 0, 0), time });
    opened.push(queue);
    return queue;
  };
  const key = (name: string, suffix: string) => `leasehold:{${name}}:${suffix}`;

  /** Rewrites the queue's state hash as model 1's keys: clock, paused and signal strings, the sweep hash; model 1 had no tokens hash. */
  const downgrade = async (name: string, sweep?: Record<string, string>) => {
    const state = await admin.hgetall(key(name, 'state'));
    expect(state['version']).toBe('2');
    await admin.del(key(name, 'state'), key(name, 'tokens'));
    if (state['clock'] !== undefined) await admin.set(key(name, 'clock'), state['clock']);
    if (state['paused'] === '1') await admin.set(key(name, 'paused'), '1');
    if (state['signal'] !== undefined) await admin.set(key(name, 'signal'), state['signal']);
    if (sweep !== undefined) await admin.hset(key(name, 'sweep'), sweep);
    return state;
  };
  const modelOneKeys = async (name: string) => Promise.all(['clock', 'paused', 'signal', 'sweep'].map((suffix) => admin.exists(key(name, suffix))));

  it('is converted by the first call: its jobs, leases, pause and wake counter carry over, and delayed jobs and leases still fall due', async () => {
    const name = `model1-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const before = await open(name, clock);
    const [a, b, c] = [await before.submit('t', 'a'), await before.submit('t', 'b', { delayMillis: 5_000 }), await before.submit('t', 'c')];
    expect((await before.poll('w', LEASE))?.jobId).toBe(a);
    await before.pause();
    const old = await downgrade(name);
    expect(await modelOneKeys(name)).toEqual([1, 1, 1, 0]);

    clock.advance(100);
    const after = await open(name, clock);
    expect(await after.stats()).toMatchObject({ pending: 2, ready: 1, running: 1, paused: true });
    const state = await admin.hgetall(key(name, 'state'));
    expect(state).toMatchObject({ version: '2', paused: '1', signal: old['signal'], clock: String(T0 + 100) });
    expect(await modelOneKeys(name)).toEqual([0, 0, 0, 0]);
    expect(await after.poll('w', LEASE)).toBeUndefined();

    await after.resume();
    expect(Number(await admin.hget(key(name, 'state'), 'signal'))).toBe(Number(old['signal']) + 1);
    expect((await after.poll('w', 60_000))?.jobId).toBe(c);
    // a's lease, taken under model 1, expires at its time; b, delayed under model 1, is due at its runAt.
    clock.advance(LEASE);
    expect(await after.poll('w', 60_000)).toMatchObject({ jobId: a, attempt: 2 });
    clock.advance(5_000 - LEASE - 101);
    expect(await after.poll('w', 60_000)).toBeUndefined();
    clock.advance(1);
    expect((await after.poll('w', 60_000))?.jobId).toBe(b);
  });

  it('carries a catch-up in progress, rate limits with a held job and the listing sets over', async () => {
    const name = `model1-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const before = await open(name, clock);
    await before.jobs({ limit: 1 }); // the listing sets are kept from here on
    await before.setRateLimit('limited', { max: 1, windowMillis: 60_000 });
    const [first, second] = [await before.submit('limited', '1'), await before.submit('limited', '2')];
    const firstLease = await before.poll('w', 60_000);
    expect(firstLease?.jobId).toBe(first);
    expect(await before.poll('w', 60_000)).toBeUndefined(); // second is held until the window opens
    // 120 jobs due at T0 + 1000, then a call at T0 + 1000 files them in the ready index.
    const delayed = await before.submitMany(Array.from({ length: 120 }, (_, i) => ({ type: 't', payload: String(i), delayMillis: 1_000 })));
    clock.advance(1_000);
    expect(await before.stats()).toMatchObject({ pending: 121, ready: 121, running: 1 });
    // A model 1 call at T0 began to take them out again: it took the first 50 (in the sweep's order) and
    // saved where it was, as model 1 did (K.sweep), the clock still at T0 + 1000.
    const swept = await admin.zrangebyscore(key(name, 'pending'), `(${T0}`, T0 + 1_000, 'LIMIT', 0, 50);
    const members = await admin.zrange(key(name, 'ready'), '0', '-1');
    await admin.zrem(key(name, 'ready'), ...members.filter((member) => swept.includes(String(Number(member.slice(32))))));
    await downgrade(name, { min: String(T0 + 1_000), max: String(T0 + 1_000), offset: '50', add: '0', to: String(T0) });
    expect(await admin.get(key(name, 'clock'))).toBe(String(T0 + 1_000));

    const after = await open(name, clock);
    // The saved sweep runs to its end (T0), then the index follows the call's clock (T0 + 1000) again.
    expect(await after.stats()).toMatchObject({ pending: 121, ready: 121, running: 1 });
    expect(await admin.hmget(key(name, 'state'), 'clock', 'sweepMin', 'limited', 'listed')).toEqual([String(T0 + 1_000), null, '1', '1']);
    expect(await after.rateLimits()).toEqual([{ type: 'limited', max: 1, windowMillis: 60_000 }]);

    const leased = await after.pollMany('w', 60_000, 200);
    expect(leased.map((lease) => lease.jobId)).toEqual(delayed);
    expect((await after.jobs({ status: 'RUNNING', limit: 1000 })).jobs.map((job) => job.id)).toEqual([first, ...delayed]);
    expect((await after.jobs({ status: 'PENDING' })).jobs.map((job) => job.id)).toEqual([second]);
    // A lease taken under model 1 (its token only in its hash) is fenced as one taken now.
    const outcome = await after.completeManyAndPoll([{ jobId: first, token: firstLease!.token + 1 }, { jobId: first, token: firstLease!.token }, leased[0]!, leased[0]!], 'w', 60_000, 0);
    expect(outcome.refused.map(({ jobId, error }) => [jobId, error.name])).toEqual([[first, 'StaleLeaseError'], [delayed[0], 'StaleLeaseError']]);
    expect([(await after.view(first)).status, (await after.view(delayed[0]!)).status]).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    clock.advance(60_000);
    expect((await after.poll('w', 60_000))?.jobId).toBe(second);
  });

  it('is refused, unchanged, when its state names a newer data model', async () => {
    const name = `model1-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const queue = await open(name, clock);
    const id = await queue.submit('t', 'a');
    // 3 is data model 2 with group turns, 4 and 5 those with binary values, 6 to 9 those four with flows, 11, 13, 15
    // and 17 the grouped ones while their turns start (scripts.ts): 10 is the first this build does not know.
    // A version written otherwise than a build writes it ('6.0') is no model this one knows either.
    for (const version of ['10', '6.0']) {
      await admin.hset(key(name, 'state'), 'version', version);
      const before = await admin.hgetall(key(name, 'state'));
      for (const call of [() => queue.stats(), () => queue.poll('w', LEASE), () => queue.submit('t', 'b'), () => queue.view(id)]) {
        await expect(call()).rejects.toMatchObject({ name: 'IllegalStateError', code: 'ERR_ILLEGAL_STATE', message: expect.stringContaining('newer leasehold') });
      }
      expect(await admin.hgetall(key(name, 'state'))).toEqual(before);
    }
    expect(await admin.hgetall(key(name, 'job:1'))).toMatchObject({ status: 'PENDING' });
    expect(await admin.get(key(name, 'jobSeq'))).toBe('1');
  });

  it('is converted once when clients race to the first call: every job is leased once', async () => {
    const name = `model1-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const before = await open(name, clock);
    const ids = await before.submitMany(Array.from({ length: 40 }, (_, i) => ({ type: 't', payload: String(i) })));
    await downgrade(name);
    const clients = await Promise.all([open(name, clock), open(name, clock), open(name, clock)]);
    const leased = (await Promise.all(clients.map((client) => client.pollMany('w', 60_000, 20)))).flat().map((lease) => lease.jobId);
    expect(leased.length).toBe(40);
    expect([...leased].sort()).toEqual([...ids].sort());
    expect(await admin.hget(key(name, 'state'), 'version')).toBe('2');
  });
});
