/**
 * WorkerPool on a RedisJobQueue, and on a PartitionedRedisQueue (the same
 * suite for each), with real piscina threads: the same pool as for a
 * JobQueue (pool/backend.ts), each thread opening its own connection from
 * `queue.share()`. What a handler's return or throw does,
 * retries with backoff, dead letters, a thread that dies or blocks past its
 * lease, drain / close, and stats() as a Promise.
 *
 * One private redis-server for the file (test/support/redis-harness.ts); every test
 * has a queue name of its own, on systemClock. Handlers are the pool tests'
 * own (test/fixtures/pool-handlers.mjs): they log JSON lines into a temp
 * directory named in the payload, and every test reads the whole log.
 * Waiting is polling a condition with a deadline; no assertion on how long
 * anything took, only lower bounds the queue's rules guarantee.
 */
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  IllegalStateError, PartitionedRedisQueue, RedisJobQueue, RetryPolicy, WorkerPool, systemClock, type PoolStats, type RedisQueueOptions,
} from '../../dist/index.js';
import { pause } from '../support/helpers.js';
import { HANDLERS, counts, scratch, track, trackQueue, until, type Scratch } from '../support/pool-harness.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

/** A lease long enough that a healthy thread on a loaded machine never loses one by accident. */
const LEASE = 2_000;

let server: RedisServer | undefined;
let names = 0;

type TestQueue = RedisJobQueue | PartitionedRedisQueue;

/** The shapes of Redis queue the pool must work on alike. */
const SHAPES: ReadonlyArray<{ name: string; connect(options: RedisQueueOptions): Promise<TestQueue> }> = [
  { name: 'a RedisJobQueue', connect: (options) => RedisJobQueue.connect(options) },
  { name: 'a PartitionedRedisQueue of 3 partitions', connect: (options) => PartitionedRedisQueue.connect({ ...options, partitions: 3 }) },
];

async function startedPool(queue: TestQueue, options: { threads: number; leaseMillis?: number; workerId?: string }): Promise<WorkerPool<TestQueue>> {
  const pool = track(new WorkerPool(queue, { handlers: HANDLERS, leaseMillis: LEASE, ...options }));
  await pool.start();
  return pool;
}

/** Resolves once every job in `ids` is SUCCEEDED or DEAD; fails with their views after `ms`. */
async function settled(queue: TestQueue, ids: readonly string[], ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const views = await Promise.all(ids.map((id) => queue.view(id)));
    if (views.every((v) => v.status === 'SUCCEEDED' || v.status === 'DEAD')) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${ids.join(', ')} to settle: ${JSON.stringify(views)}`);
    await pause(10);
  }
}

/** Polls an async condition until it holds; fails with `explain()` after `ms`. */
async function eventually(what: string, condition: () => Promise<boolean>, ms = 15_000, explain: () => Promise<unknown> = async () => ''): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for: ${what} ${JSON.stringify(await explain())}`);
    await pause(10);
  }
}

/** `parties` jobs that can only succeed together, at once, each on a thread of its own (concurrency 1). */
async function expectLiveThreads(queue: TestQueue, s: Scratch, group: string, parties: number): Promise<void> {
  const ids = await queue.submitMany(Array.from({ length: parties }, () => ({ type: 'meet', payload: s.payload({ group, parties, giveUpMillis: 10_000 }) })));
  await settled(queue, ids, 30_000);
  for (const id of ids) expect(await queue.view(id), `${id} of group ${group}`).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  expect(new Set(s.events('ok').filter((l) => l.group === group).map((l) => l.threadId)).size).toBe(parties);
}

/** Asserts that `promise` rejects with an error of class `cls` and code `code`. */
async function rejectsWith(promise: Promise<unknown>, cls: abstract new (...args: never[]) => Error, code: string): Promise<void> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error, 'expected the promise to reject').toBeInstanceOf(cls);
  expect((error as { code?: unknown }).code).toBe(code);
}

for (const shape of SHAPES) describeRedis(`WorkerPool on ${shape.name}`, () => {
  /** A queue of this shape on systemClock under a name no other test uses; closed after the test (after its pools). */
  const redisQueue = async (maxAttempts = 3, base = 0, cap = base): Promise<TestQueue> => trackQueue(await shape.connect({
    redis: server!.url,
    name: `pool-${process.pid}-${++names}`,
    policy: new RetryPolicy(maxAttempts, base, cap),
    time: systemClock,
  }));

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  describe('jobs and outcomes', { timeout: 60_000 }, () => {
    it('runs every one of 200 jobs exactly once on the pool threads: all SUCCEEDED after exactly one attempt', async () => {
      const s = scratch();
      const queue = await redisQueue(1);
      const pool = await startedPool(queue, { threads: 3, workerId: 'redis' });
      const jobs = 200;
      const ids = await queue.submitMany(Array.from({ length: jobs }, (_, n) => ({ type: 'noop', payload: s.payload({ n }) })));
      await pool.drain();

      const oks = s.events('ok');
      const runs = counts(oks.map((l) => l.n as number));
      expect([...runs].filter(([, times]) => times !== 1), 'payloads run other than exactly once').toEqual([]);
      expect(runs.size).toBe(jobs);
      for (const line of oks) expect(line).toMatchObject({ jobId: ids[line.n as number], attempt: 1 });
      const views = await Promise.all(ids.map((id) => queue.view(id)));
      const wrong = views.filter((v) => v.status !== 'SUCCEEDED' || v.attempts !== 1 || !/^redis-[012]$/.test(v.workerId ?? ''));
      expect(wrong, 'jobs not SUCCEEDED once by a pool thread').toEqual([]);
      expect(await pool.stats()).toEqual({
        pending: 0, ready: 0, delayed: 0, running: 0, succeeded: jobs, dead: 0, cancelled: 0, paused: false, threads: 3, restarts: 0, refused: 0,
      });
      // Every thread polls for itself: three jobs that only finish together do.
      await expectLiveThreads(queue, s, 'three-threads', 3);
    });

    it('retries a throwing handler after each backoff and dead-letters it after exactly maxAttempts, with the last message', async () => {
      const s = scratch();
      const maxAttempts = 4;
      const queue = await redisQueue(maxAttempts, 100, 400);
      const pool = await startedPool(queue, { threads: 2 });
      const id = await queue.submit('alwaysFails', s.payload());
      await pool.drain();
      expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: maxAttempts, lastError: `boom on attempt ${maxAttempts}` });
      expect((await queue.deadLetters()).map((v) => v.id)).toEqual([id]);
      const starts = s.events('start', id);
      expect(starts.map((l) => l.attempt)).toEqual([1, 2, 3, 4]);
      // Attempt k+1 cannot start before attempt k failed plus its backoff (100, 200, 400 ms): lower bounds only.
      [100, 200, 400].forEach((backoff, k) => {
        expect(starts[k + 1]!.t - starts[k]!.t, `gap after attempt ${k + 1}`).toBeGreaterThanOrEqual(backoff);
      });
      expect(await pool.stats()).toMatchObject({ dead: 1, pending: 0, running: 0, restarts: 0, refused: 0 });
    });

    it('completes a handler that throws twice and then returns: SUCCEEDED on attempt 3, lastError from attempt 2', async () => {
      const s = scratch();
      const queue = await redisQueue(5, 50, 50);
      const pool = await startedPool(queue, { threads: 2 });
      const id = await queue.submit('flaky', s.payload({ succeedOn: 3 }));
      await pool.drain();
      expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 3, lastError: 'flaky attempt 2' });
      expect(s.events('start', id).map((l) => l.attempt)).toEqual([1, 2]);
      expect(s.events('ok', id).map((l) => l.attempt)).toEqual([3]);
    });

    it.each([
      ['PermanentError from leasehold', 'poison', 'this payload can never work'],
      ['an error of its own named PermanentError', 'poisonByName', 'rejected by name'],
    ])('dead-letters the job at once, after one attempt, when the handler throws %s', async (_, type, message) => {
      const s = scratch();
      const queue = await redisQueue(5);
      const pool = await startedPool(queue, { threads: 2 });
      const id = await queue.submit(type, s.payload());
      await pool.drain();
      expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: message });
      expect(s.events('start', id)).toHaveLength(1);
      expect((await queue.deadLetters()).map((v) => v.id)).toEqual([id]);
    });

    it('dead-letters at once a job whose type has no handler, with a lastError that names the type', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const pool = await startedPool(queue, { threads: 1 });
      const id = await queue.submit('nobody-handles-this', s.payload());
      await pool.drain();
      const view = await queue.view(id);
      expect(view).toMatchObject({ status: 'DEAD', attempts: 1 });
      expect(view.lastError).toContain('No handler for job type "nobody-handles-this"');
    });
  });

  describe('heartbeats, the signal and concurrency', { timeout: 60_000 }, () => {
    it('keeps the lease of a job that runs 3 × leaseMillis while its thread stays responsive: one attempt, never aborted', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const leaseMillis = 1_500;
      const pool = await startedPool(queue, { threads: 2, leaseMillis });
      const id = await queue.submit('slow', s.payload({ ms: 3 * leaseMillis }));
      await pool.drain();
      expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
      expect(s.events('start', id)).toHaveLength(1);
      expect(s.events('ok', id)).toEqual([expect.objectContaining({ attempt: 1, signalAborted: false })]);
      expect(await pool.stats()).toMatchObject({ restarts: 0, refused: 0 });
    });

    it('aborts ctx.signal when the pool closes; a handler that stops then leaves its job PENDING, not lost', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const pool = await startedPool(queue, { threads: 1 });
      const id = await queue.submit('awaitAbort', s.payload({ then: 'throw' }));
      await until('the handler started', () => s.events('start', id).length === 1);
      await pool.close();
      expect(s.events('aborted', id)).toHaveLength(1);
      // A shutdown is not a failure: the interrupted attempt is not counted, and the job is ready at once.
      expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
      expect(await queue.stats()).toMatchObject({ running: 0, ready: 1 });
    });

    it('runs `concurrency` jobs at once inside one thread', async () => {
      const s = scratch();
      const queue = await redisQueue(1);
      const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, concurrency: 3, leaseMillis: LEASE }));
      await pool.start();
      // Each job waits until 3 jobs of its own thread are inside at once (maxAttempts 1: no second chance).
      const ids = await queue.submitMany(Array.from({ length: 3 }, () => ({ type: 'barrier', payload: s.payload({ parties: 3, giveUpMillis: 10_000 }) })));
      await pool.drain();
      for (const id of ids) expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      const oks = s.events('ok');
      expect(new Set(oks.map((l) => l.threadId)).size).toBe(1);
      expect(Math.max(...oks.map((l) => l.maxInside as number))).toBe(3);
    });
  });

  describe('a thread that dies or blocks', { timeout: 60_000 }, () => {
    it.each([
      ['calls process.exit mid-job', 'crashByExit'],
      ['throws outside any handler (from a timer)', 'crashByThrow'],
      ['leaves a promise rejection unhandled', 'crashByRejection'],
    ])('loses only its own lease when it %s: the job is handed back, retried and completed once; the thread is replaced', async (_, type) => {
      const s = scratch();
      const queue = await redisQueue(3);
      const pool = await startedPool(queue, { threads: 2 });
      // A bystander on the other thread, running across the crash.
      const bystander = await queue.submit('slow', s.payload({ ms: 1_500 }));
      await until('the bystander started', () => s.events('start', bystander).length === 1);
      const victim = await queue.submit(type, s.payload());
      await settled(queue, [victim, bystander]);
      await eventually('the dead thread was replaced', async () => (await pool.stats()).restarts >= 1);

      // Handed back by the pool's main thread through its own connection as soon as the thread died, not left to expire.
      expect(await queue.view(victim)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'the worker thread died while running the job' });
      expect(s.events('start', victim).map((l) => l.attempt)).toEqual([1]);
      expect(s.events('ok', victim).map((l) => l.attempt)).toEqual([2]);
      expect(await queue.view(bystander)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      expect(s.events('ok', bystander)).toHaveLength(1);

      await expectLiveThreads(queue, s, 'after-crash', 2);
      expect(await pool.stats()).toMatchObject({ succeeded: 4, running: 0, pending: 0, restarts: 1, refused: 0 });
    });

    it('dead-letters a job that takes its thread down on every attempt after maxAttempts, and keeps serving others', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const pool = await startedPool(queue, { threads: 2 });
      const poison = await queue.submit('crashAlways', s.payload());
      await settled(queue, [poison], 30_000);
      expect(await queue.view(poison)).toMatchObject({ status: 'DEAD', attempts: 3, lastError: 'the worker thread died while running the job' });
      expect(s.events('start', poison).map((l) => l.attempt)).toEqual([1, 2, 3]);
      await eventually('every dead thread was replaced', async () => (await pool.stats()).restarts >= 3);
      await expectLiveThreads(queue, s, 'after-poison', 2);
    });

    it('loses its job past its lease to another thread when it never yields, and is terminated and replaced', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const leaseMillis = 1_000;
      const pool = await startedPool(queue, { threads: 2, leaseMillis });
      const id = await queue.submit('hang', s.payload());
      await settled(queue, [id]);
      expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'lease expired' });
      const [hung] = s.events('start', id);
      const [ok, ...more] = s.events('ok', id);
      expect(more).toEqual([]);
      expect(ok!.attempt).toBe(2);
      expect(ok!.threadId).not.toBe(hung!.threadId);
      // The busy loop would spin for 30 s; the thread is terminated instead, and replaced.
      await eventually('the hung thread was replaced', async () => (await pool.stats()).restarts >= 1);
      await expectLiveThreads(queue, s, 'after-hang', 2);
      expect(s.events('hang-ended')).toEqual([]);
    });

    it('refuses the late complete of a thread that blocked past its lease (a zombie): the job succeeds once, on another attempt', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const leaseMillis = 1_500;
      const pool = await startedPool(queue, { threads: 2, leaseMillis });
      // Blocks its thread (no heartbeat) past the lease, but well short of the 2 leases after which the pool
      // would terminate the thread as hung; then returns as if it had succeeded.
      const id = await queue.submit('block', s.payload({ blockMillis: leaseMillis + 300 }));
      await settled(queue, [id]);
      await until('the zombie returned', () => s.events('zombie-returns', id).length === 1, 15_000, () => s.lines());
      await eventually('its complete was refused', async () => (await pool.stats()).refused >= 1, 15_000, () => pool.stats());
      expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'lease expired' });
      expect(s.events('ok', id).map((l) => l.attempt)).toEqual([2]);
      expect(await pool.stats()).toMatchObject({ succeeded: 1, refused: 1, restarts: 0 });
    });
  });

  describe('drain, close and stats', { timeout: 60_000 }, () => {
    it('drain() resolves only when no job is PENDING (delayed or in backoff) or RUNNING', async () => {
      const s = scratch();
      const queue = await redisQueue(3, 100, 100);
      const pool = await startedPool(queue, { threads: 2 });
      const delayed = await queue.submit('noop', s.payload(), 0, Date.now() + 300);
      const retrying = await queue.submit('flaky', s.payload({ succeedOn: 3 }));
      const slow = await queue.submit('slow', s.payload({ ms: 200 }));
      await pool.drain();
      expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 3 });
      for (const id of [delayed, retrying, slow]) expect((await queue.view(id)).status).toBe('SUCCEEDED');
    });

    it('drain() resolves at once on an empty queue, and rejects with IllegalStateError when no pool thread would drain it', async () => {
      const queue = await redisQueue();
      const idle = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1 }));
      await idle.drain();
      await queue.submit('noop', '{}');
      await rejectsWith(idle.drain(), IllegalStateError, 'ERR_ILLEGAL_STATE');
    });

    it('close() lets a running job finish: a job that ignores the signal completes on its first attempt', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const pool = await startedPool(queue, { threads: 2 });
      const id = await queue.submit('slow', s.payload({ ms: 300 }));
      await until('the job started', () => s.events('start', id).length === 1);
      await pool.close();
      expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      expect(s.events('ok', id)).toEqual([expect.objectContaining({ signalAborted: true })]);
    });

    it('close() hands back a job that outlives its chance to finish: PENDING, ready, attempt not counted, never completed by the stopped thread', async () => {
      const s = scratch();
      const queue = await redisQueue(3);
      const pool = await startedPool(queue, { threads: 1 });
      const id = await queue.submit('slow', s.payload({ ms: 4 * LEASE, laterMs: 0 }));
      await until('the job started', () => s.events('start', id).length === 1);
      await pool.close();
      expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
      expect(await queue.stats()).toMatchObject({ running: 0, ready: 1 });
      // A job submitted after close() is not polled either: the closed pool's threads are gone, so
      // a second pool is the first to see it, and runs it on its first attempt.
      const late = await queue.submit('noop', s.payload());
      expect(await queue.view(late)).toMatchObject({ status: 'PENDING', attempts: 0 });
      expect(s.events('ok')).toEqual([]);

      const next = await startedPool(queue, { threads: 1 });
      await next.drain();
      expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      expect(s.events('start', id).map((l) => l.attempt)).toEqual([1, 1]);
      expect(s.events('ok', id).map((l) => l.attempt)).toEqual([1]);
      expect(await queue.view(late)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      expect(s.events('ok', late)).toHaveLength(1);
    });

    it('close() can be called again and concurrently: every call resolves, and the queue stays open', async () => {
      const queue = await redisQueue();
      const pool = await startedPool(queue, { threads: 2 });
      await Promise.all([pool.close(), pool.close()]);
      await pool.close();
      const id = await queue.submit('noop', '{}');
      expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0 });
    });

    it('stats() returns a Promise of the queue counts plus threads, restarts and refused', async () => {
      const s = scratch();
      const queue = await redisQueue(1);
      const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 3, leaseMillis: LEASE }));
      expectTypeOf(pool.stats()).toEqualTypeOf<Promise<PoolStats>>();
      const before = pool.stats();
      expect(before).toBeInstanceOf(Promise);
      expect(await before).toEqual({ ...(await queue.stats()), threads: 3, restarts: 0, refused: 0 });
      await pool.start();
      const ok = await queue.submit('noop', s.payload());
      const dead = await queue.submit('alwaysFails', s.payload());
      await queue.submit('noop', s.payload(), 0, Date.now() + 60_000);
      await settled(queue, [ok, dead]);
      const stats = await pool.stats();
      expect(stats).toEqual({ ...(await queue.stats()), threads: 3, restarts: 0, refused: 0 });
      expect(stats).toMatchObject({ succeeded: 1, dead: 1, pending: 1, delayed: 1, ready: 0, running: 0 });
    });
  });
});
