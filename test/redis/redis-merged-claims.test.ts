/**
 * completeAndPoll calls of one client made in the same tick go to Redis as
 * one script (completeAndPollMerged): each still gets its own outcome (its
 * lease or none, or its own refusal, the zombie's StaleLeaseError alone), the
 * result is the calls' run one after another (on a capped queue a later
 * call's complete frees the place its own poll takes, never an earlier
 * call's), and claim loops racing with leases that expire never hold one job
 * at once, every claim checked.
 */
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, RedisJobQueue, RetryPolicy, StaleLeaseError, systemClock, type Lease, type TimeSource } from '../../dist/index.js';
import { T0, mustPoll } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const LEASE = 1_000;
let names = 0;

describeRedis('RedisJobQueue: completeAndPoll calls merged', () => {
  const opened: RedisJobQueue[] = [];
  const admins: Redis[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
    admins.splice(0).forEach((admin) => admin.disconnect());
  });
  const open = async (time: TimeSource, name = `merged-${process.pid}-${++names}`) => {
    const queue = await RedisJobQueue.connect({ redis: (await fileRedis()).url, name, policy: new RetryPolicy(100, 0, 0), time });
    opened.push(queue);
    return queue;
  };
  /** FCALLs the server ran so far. */
  const scripts = async () => {
    if (admins.length === 0) admins.push(new Redis((await fileRedis()).url));
    const stats = await admins[0]!.info('commandstats');
    return Number(/^cmdstat_fcall:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
  };

  it('sends the calls of one tick as one script: each gets its own lease, best first in call order, and a zombie\'s complete fails alone', async () => {
    const clock = new ManualClock(T0);
    const queue = await open(clock);
    await queue.submitMany(Array.from({ length: 4 }, (_, i) => ({ type: 't', payload: `held${i}` })));
    const zombie = await mustPoll(queue, 'J1', LEASE, 'zombie');
    clock.advance(LEASE);
    // The zombie's lease expired: J1 is retried, and leased again to a live worker with the other three.
    const live: Lease[] = [];
    for (let i = 0; i < 4; i++) live.push(await mustPoll(queue, undefined, LEASE, `w${i}`));
    expect(live.map((lease) => lease.jobId).sort()).toEqual(['J1', 'J2', 'J3', 'J4']);
    await queue.submitMany([{ type: 't', payload: 'low' }, { type: 't', payload: 'high', priority: 9 }, { type: 't', payload: 'mid', priority: 5 }]);
    const before = await scripts();
    const calls = [
      queue.completeAndPoll(zombie.jobId, zombie.token, 'zombie', LEASE),
      ...live.map((lease, i) => queue.completeAndPoll(lease.jobId, lease.token, `w${i}`, LEASE, `done ${i}`)),
    ];
    const outcomes = await Promise.allSettled(calls);
    expect(await scripts()).toBe(before + 1);
    const [refused, ...served] = outcomes;
    expect(refused?.status).toBe('rejected');
    const error = (refused as PromiseRejectedResult).reason as StaleLeaseError;
    expect(error).toBeInstanceOf(StaleLeaseError);
    expect(error.message).toContain(zombie.jobId);
    const leases = served.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : outcome.reason)) as Array<Lease | undefined>;
    // Three ready jobs for four calls: the first three in call order, best first; the last none.
    expect(leases.map((lease) => lease?.payload)).toEqual(['high', 'mid', 'low', undefined]);
    for (const [i, lease] of leases.entries()) if (lease !== undefined) expect((await queue.view(lease.jobId)).workerId).toBe(`w${i}`);
    expect(new Set(leases.filter(Boolean).map((lease) => lease!.token)).size).toBe(3);
    for (const [i, lease] of live.entries()) expect(await queue.view(lease.jobId)).toMatchObject({ status: 'SUCCEEDED', result: `done ${i}` });
    expect(await queue.stats()).toMatchObject({ running: 3, succeeded: 4, pending: 0 });
  });

  it('runs the calls one after another on a capped queue: an earlier call\'s poll never takes the place a later call\'s complete frees', async () => {
    const clock = new ManualClock(T0);
    const queue = await open(clock);
    await queue.setConcurrency('a', 1);
    await queue.submit('a', 'a1');
    await queue.submit('b', 'b1');
    const x = await mustPoll(queue, 'J1', LEASE, 'x');
    const y = await mustPoll(queue, 'J2', LEASE, 'y');
    await queue.submit('a', 'a2', 9);
    await queue.submit('b', 'b2');
    const before = await scripts();
    // y first: a1 still runs when y polls, so y cannot take a2 (type a at its cap) and takes b2; x's complete then frees a2 for x.
    const [forY, forX] = await Promise.all([queue.completeAndPoll(y.jobId, y.token, 'y', LEASE), queue.completeAndPoll(x.jobId, x.token, 'x', LEASE)]);
    expect(await scripts()).toBe(before + 1);
    expect([forY?.payload, forX?.payload]).toEqual(['b2', 'a2']);
  });

  it('keeps every claim exact with many loops on two clients racing with leases that expire', async () => {
    const LOOPS = 8;
    const JOBS = 300;
    const SHORT = 150;
    const name = `merged-race-${process.pid}-${++names}`;
    const clients = [await open(systemClock, name), await open(systemClock, name)];
    await clients[0]!.submitMany(Array.from({ length: JOBS }, (_, i) => ({ type: 't', payload: String(i) })));
    const leases: Lease[] = [];
    const completed: Lease[] = [];
    const refused: Lease[] = [];
    let calls = 0;
    // The gates every holder waits for (see below): one timer wakes them together.
    let wake = () => {};
    let gate = new Promise<void>((resolve) => (wake = resolve));
    const opening = setInterval(() => {
      const waking = wake;
      gate = new Promise<void>((resolve) => (wake = resolve));
      waking();
    }, SHORT / 2);
    const before = await scripts();
    const loop = async (queue: RedisJobQueue, worker: string) => {
      calls++;
      let lease = await queue.poll(worker, SHORT);
      while (lease !== undefined) {
        leases.push(lease);
        const held = lease;
        // Every holder completes as a gate opens, so that live and zombie completes are merged; a first lease of one job in
        // three outlives its length (four gates: more than SHORT), its holder a zombie by the time it completes.
        const gates = held.attempt === 1 && Number(held.payload) % 3 === 0 ? 4 : 1;
        for (let i = 0; i < gates; i++) await gate;
        calls++;
        try {
          lease = await queue.completeAndPoll(held.jobId, held.token, worker, SHORT);
          completed.push(held);
        } catch (error) {
          if (!(error instanceof StaleLeaseError)) throw error;
          refused.push(held);
          calls++;
          lease = await queue.poll(worker, SHORT);
        }
        // Expired leases of jobs no one polls again are retried: look once more before stopping.
        if (lease === undefined && completed.length < JOBS) {
          await new Promise((resolve) => setTimeout(resolve, SHORT));
          calls++;
          lease = await queue.poll(worker, SHORT);
        }
      }
    };
    try {
      await Promise.all(clients.flatMap((queue, c) => Array.from({ length: LOOPS }, (_, i) => loop(queue, `c${c}w${i}`))));
    } finally {
      clearInterval(opening);
    }
    // Merged: fewer scripts than calls.
    expect(await scripts() - before).toBeLessThan(calls);
    expect(refused.length).toBeGreaterThan(0);
    const byJob = new Map<string, Lease[]>();
    for (const lease of leases) byJob.set(lease.jobId, [...(byJob.get(lease.jobId) ?? []), lease]);
    expect(byJob.size).toBe(JOBS);
    expect(new Set(completed.map((lease) => lease.jobId)).size).toBe(completed.length);
    expect(completed).toHaveLength(JOBS);
    for (const [jobId, held] of byJob) {
      held.sort((a, b) => a.attempt - b.attempt);
      const view = await clients[0]!.view(jobId);
      // Every lease counted as an attempt, none given twice, and only the last one's complete taken.
      expect(held.map((lease) => lease.attempt)).toEqual(held.map((_, i) => i + 1));
      expect(view).toMatchObject({ status: 'SUCCEEDED', attempts: held.length });
      expect(completed.find((lease) => lease.jobId === jobId)).toBe(held[held.length - 1]);
      // No two leases of a job at once: each begins no earlier than the one before it ended.
      for (let i = 1; i < held.length; i++) expect(held[i]!.leaseUntil - SHORT).toBeGreaterThanOrEqual(held[i - 1]!.leaseUntil);
    }
    for (const lease of refused) expect(byJob.get(lease.jobId)!.at(-1)).not.toBe(lease);
  });
});
