/**
 * Batched claims: pollMany leases several ready jobs in one script, and
 * completeManyAndPoll completes several and leases the next ones in one
 * script, with each job's attempt counted exactly and each complete fenced by
 * its own token. On one server and on a 3-master cluster.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  InvalidArgumentError, JobNotFoundError, ManualClock, RedisJobQueue, RetryPolicy, StaleLeaseError, systemClock, type Lease, type RedisTarget,
  type TimeSource,
} from '../../dist/index.js';
import { T0, throwsWhenRead, unreadable } from '../support/helpers.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster-harness.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

interface Deployment {
  start(): Promise<RedisTarget>;
  stop(): Promise<void>;
}

function singleServer(): Deployment {
  let server: RedisServer | undefined;
  return {
    start: async () => (server = await startRedis()).url,
    stop: async () => server?.stop(),
  };
}

function cluster(): Deployment {
  let running: RedisCluster | undefined;
  return {
    start: async () => ({ cluster: (running = await startRedisCluster(3)).nodes }),
    stop: async () => running?.stop(),
  };
}

describeRedis('RedisJobQueue: batched claims', () => {
  describe.each([['one server', singleServer()], ['a 3-master cluster', cluster()]] as const)('on %s', (_where, deployment) => {
    let target: RedisTarget;
    const opened: RedisJobQueue[] = [];
    let names = 0;
    const open = async (time: TimeSource = new ManualClock(T0), name = `batch-${process.pid}-${++names}`) => {
      const queue = await RedisJobQueue.connect({ redis: target, name, policy: new RetryPolicy(3, 0, 0), time });
      opened.push(queue);
      return queue;
    };
    beforeAll(async () => {
      target = await deployment.start();
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((queue) => queue.close()));
    });
    afterAll(() => deployment.stop());

    it('leases up to max ready jobs best first, each with its own token and attempt, and none when none is ready', async () => {
      const queue = await open();
      await queue.submitMany([{ type: 't', payload: 'low' }, { type: 't', payload: 'high', priority: 5 }, { type: 't', payload: 'mid', priority: 1 }]);
      const first = await queue.pollMany('w', 1000, 2);
      expect(first.map((lease) => lease.payload)).toEqual(['high', 'mid']);
      expect(first.map((lease) => lease.attempt)).toEqual([1, 1]);
      expect(first[1]!.token).toBeGreaterThan(first[0]!.token);
      expect(await queue.pollMany('w', 1000, 5)).toMatchObject([{ jobId: 'J1', payload: 'low', attempt: 1, leaseUntil: T0 + 1000 }]);
      expect(await queue.pollMany('w', 1000, 5)).toEqual([]);
      expect(await queue.stats()).toMatchObject({ running: 3, pending: 0 });
      expect((await queue.view('J2')).workerId).toBe('w');
    });

    it('completes every valid lease of a batch and reports each refused one with its own error, then leases the next jobs', async () => {
      const clock = new ManualClock(T0);
      const queue = await open(clock);
      await queue.submitMany(Array.from({ length: 6 }, (_, i) => ({ type: 't', payload: String(i) })));
      const [a, b, c] = await queue.pollMany('w', 1000, 3) as [Lease, Lease, Lease];
      await queue.complete(c.jobId, c.token);
      const outcome = await queue.completeManyAndPoll(
        [{ jobId: a.jobId, token: a.token }, { jobId: b.jobId, token: b.token + 100 }, { jobId: c.jobId, token: c.token }, { jobId: 'J99', token: 1 }],
        'w', 1000, 2,
      );
      expect(outcome.refused.map(({ jobId, error }) => [jobId, error.constructor.name, error.code])).toEqual([
        [b.jobId, StaleLeaseError.name, 'ERR_STALE_LEASE'],
        [c.jobId, StaleLeaseError.name, 'ERR_STALE_LEASE'],
        ['J99', JobNotFoundError.name, 'ERR_JOB_NOT_FOUND'],
      ]);
      expect(outcome.leases.map((lease) => lease.payload)).toEqual(['3', '4']);
      expect((await queue.view(a.jobId)).status).toBe('SUCCEEDED');
      expect(await queue.view(b.jobId)).toMatchObject({ status: 'RUNNING', attempts: 1 });
      // Complete only (max 0): b with its real token.
      expect(await queue.completeManyAndPoll([{ jobId: b.jobId, token: b.token }], 'w', 1000, 0)).toEqual({ refused: [], leases: [] });
      expect(await queue.stats()).toMatchObject({ succeeded: 3, running: 2, pending: 1 });
    });

    it('fences each job of a batch: a lease that expired and was leased again is refused, its new holder is not', async () => {
      const clock = new ManualClock(T0);
      const queue = await open(clock);
      await queue.submitMany([{ type: 't', payload: 'slow' }, { type: 't', payload: 'fast' }]);
      const [slow, fast] = await queue.pollMany('zombie', 100, 2) as [Lease, Lease];
      await queue.extend(fast.jobId, fast.token, 1000);
      clock.advance(100);
      const [again] = await queue.pollMany('other', 1000, 5);
      expect(again).toMatchObject({ jobId: slow.jobId, attempt: 2 });
      const late = await queue.completeManyAndPoll([{ jobId: slow.jobId, token: slow.token }, { jobId: fast.jobId, token: fast.token }], 'zombie', 1000, 1);
      expect(late.refused.map(({ jobId, error }) => [jobId, error.code])).toEqual([[slow.jobId, 'ERR_STALE_LEASE']]);
      expect(late.leases).toEqual([]);
      expect(await queue.completeManyAndPoll([{ jobId: again!.jobId, token: again!.token }], 'other', 1000, 1)).toEqual({ refused: [], leases: [] });
      expect(await queue.view(slow.jobId)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    });

    it('fences a batch lease ended one job at a time: after complete, fail or release, its token completes nothing in a batch', async () => {
      const queue = await open();
      await queue.submitMany(['a', 'b', 'c', 'd'].map((payload) => ({ type: 't', payload })));
      const [a, b, c, d] = await queue.pollMany('w', 60_000, 4) as [Lease, Lease, Lease, Lease];
      await queue.complete(a.jobId, a.token);
      await queue.fail(b.jobId, b.token, new Error('no'), { permanent: true });
      await queue.release(c.jobId, c.token);
      const [again] = await queue.pollMany('w', 60_000, 1);
      expect(again).toMatchObject({ jobId: c.jobId, attempt: 1 });
      const outcome = await queue.completeManyAndPoll([a, b, c, d].map(({ jobId, token }) => ({ jobId, token })), 'w', 60_000, 1);
      expect(outcome.refused.map(({ jobId, error }) => [jobId, error.code])).toEqual([a, b, c].map(({ jobId }) => [jobId, 'ERR_STALE_LEASE']));
      expect(await Promise.all([a, b, c, d].map(async ({ jobId }) => (await queue.view(jobId)).status))).toEqual(['SUCCEEDED', 'DEAD', 'RUNNING', 'SUCCEEDED']);
      await queue.complete(again!.jobId, again!.token);
    });

    it('rejects bad arguments and a malformed job id, having completed nothing', async () => {
      const queue = await open();
      await queue.submitMany([{ type: 't' }, { type: 't' }]);
      const [lease] = await queue.pollMany('w', 1000, 1) as [Lease];
      const valid = { jobId: lease.jobId, token: lease.token };
      const calls: Array<[() => Promise<unknown>, new (...args: never[]) => Error]> = [
        [() => queue.pollMany('w', 1000, 0), InvalidArgumentError],
        [() => queue.pollMany('w', 1000, 1001), InvalidArgumentError],
        [() => queue.pollMany('w', 1000, 1.5), InvalidArgumentError],
        [() => queue.pollMany(' ', 1000, 1), InvalidArgumentError],
        [() => queue.completeManyAndPoll('J1' as never, 'w', 1000, 1), InvalidArgumentError],
        [() => queue.completeManyAndPoll([valid, null as never], 'w', 1000, 1), InvalidArgumentError],
        // A hole of a sparse array is no completion; an array or a completion that throws as it is read is refused, its error not let out.
        [() => queue.completeManyAndPoll([valid, , valid] as never, 'w', 1000, 1), InvalidArgumentError],
        [() => queue.completeManyAndPoll(new Proxy([valid], { get: throwsWhenRead }), 'w', 1000, 1), InvalidArgumentError],
        [() => queue.completeManyAndPoll([valid, unreadable('token')], 'w', 1000, 1), InvalidArgumentError],
        [() => queue.completeManyAndPoll([valid], 'w', 1000, -1), InvalidArgumentError],
        [() => queue.completeManyAndPoll([valid], 'w', 0, 1), InvalidArgumentError],
        [() => queue.completeManyAndPoll([valid, { jobId: 'job-2', token: 1 }], 'w', 1000, 1), JobNotFoundError],
      ];
      for (const [call, errorClass] of calls) {
        let promise: Promise<unknown> | undefined;
        expect(() => (promise = call())).not.toThrow();
        await expect(promise).rejects.toBeInstanceOf(errorClass);
      }
      expect(await queue.stats()).toMatchObject({ running: 1, pending: 1, succeeded: 0 });
    });

    it('claims every one of 2000 jobs exactly once among 4 clients running batched claim loops', async () => {
      const name = `batch-race-${process.pid}-${++names}`;
      const queues = await Promise.all(Array.from({ length: 4 }, () => open(systemClock, name)));
      await queues[0]!.submitMany(Array.from({ length: 2000 }, (_, i) => ({ type: 't', payload: String(i) })));
      const claims = await Promise.all(queues.map(async (queue, q) => {
        const mine: Lease[] = [];
        for (let leases = await queue.pollMany(`w${q}`, 60_000, 16); leases.length > 0; ) {
          mine.push(...leases);
          const outcome = await queue.completeManyAndPoll(leases.map(({ jobId, token }) => ({ jobId, token })), `w${q}`, 60_000, 16);
          expect(outcome.refused).toEqual([]);
          leases = outcome.leases;
        }
        return mine;
      }));
      const all = claims.flat();
      expect(all).toHaveLength(2000);
      expect(new Set(all.map((lease) => lease.jobId)).size).toBe(2000);
      expect(new Set(all.map((lease) => lease.token)).size).toBe(2000);
      expect(all.every((lease) => lease.attempt === 1)).toBe(true);
      expect(await queues[0]!.stats()).toMatchObject({ succeeded: 2000, pending: 0, running: 0 });
    });
  });
});
