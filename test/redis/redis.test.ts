/**
 * What is particular to the Redis backend: queues by name, tokens that live in
 * Redis, durability through AOF, connection failures, many clients racing, and
 * lease expiry inside the scripts. (The contract itself is checked against
 * JobQueue in redis-differential.test.ts.)
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import {
  BackendUnavailableError, InvalidArgumentError, JobQueueError, ManualClock, RedisJobQueue, RetryPolicy, StaleLeaseError,
  systemClock, type JobView,
} from '../../dist/index.js';
import { T0, pause, thrownBy, waitUntil, withTimeout } from '../support/helpers.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

type Connect = Parameters<typeof RedisJobQueue.connect>[0];

let names = 0;
/** A queue name no other test uses. */
const fresh = (what: string) => `${what}-${process.pid}-${++names}`;

/** Connects a queue on a ManualClock (by default), closed after the test. */
function opener(server: () => RedisServer, opened: RedisJobQueue[]) {
  return async (options: Partial<Connect> & { name: string }): Promise<RedisJobQueue> => {
    const queue = await RedisJobQueue.connect({ redis: server().url, policy: new RetryPolicy(3, 0, 0), time: new ManualClock(T0), ...options });
    opened.push(queue);
    return queue;
  };
}

async function closeAll(opened: RedisJobQueue[]): Promise<void> {
  await Promise.all(opened.splice(0).map((queue) => queue.close()));
}

/**
 * Asserts that `promise` rejects with BackendUnavailableError within `ms`.
 * Call it at once on a new call's promise, so that its rejection is always observed.
 */
async function expectUnavailable(promise: Promise<unknown>, ms = 2000): Promise<BackendUnavailableError> {
  const error = await withTimeout(promise.then(() => 'resolved', (e: unknown) => e), ms, 'the call');
  expect(error).toBeInstanceOf(BackendUnavailableError);
  expect((error as JobQueueError).code).toBe('ERR_BACKEND_UNAVAILABLE');
  return error as BackendUnavailableError;
}

/** Retries `call` until it succeeds (the client reconnecting in the background). */
async function once<T>(call: () => Promise<T>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof BackendUnavailableError) || Date.now() > deadline) throw error;
      await pause(50);
    }
  }
}

/**
 * The private redis-server of a describe block, with an admin client (that
 * never retries, so a test can stop the server under it) and queues closed
 * after each test; the server is stopped after the block.
 */
interface PrivateRedis {
  server: RedisServer;
  admin: Redis;
  open: ReturnType<typeof opener>;
}

function privateRedis(): PrivateRedis {
  const opened: RedisJobQueue[] = [];
  const context: PrivateRedis = {
    server: undefined as unknown as RedisServer,
    admin: undefined as unknown as Redis,
    open: opener(() => context.server, opened),
  };
  beforeAll(async () => {
    context.server = await startRedis();
    context.admin = new Redis(context.server.url, { maxRetriesPerRequest: 0 });
    context.admin.on('error', () => undefined);
  });
  afterEach(() => closeAll(opened));
  afterAll(async () => {
    context.admin?.disconnect();
    await context.server?.stop();
  });
  return context;
}

describeRedis('RedisJobQueue', () => {
  const redis = privateRedis();
  const { open } = redis;

  it('shares a queue with another thread: attach(share()) reaches the same jobs, policy, limits and ManualClock', async () => {
    const clock = new ManualClock(T0);
    const queue = await open({ name: fresh('shared'), time: clock, policy: new RetryPolicy(2, 100, 100), maxPayloadBytes: 64 });
    const id = await queue.submit('t', 'p');
    const handle = queue.share();
    expect(structuredClone(handle)).toEqual(handle);
    const { Worker } = await import('node:worker_threads');
    const thread = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       import(workerData.dist).then(async ({ RedisJobQueue }) => {
         const queue = await RedisJobQueue.attach(workerData.handle);
         const lease = await queue.poll('thread', 1000);
         let tooBig = null;
         try { await queue.submit('t', 'x'.repeat(65)); } catch (error) { tooBig = error.code; }
         await queue.close();
         parentPort.postMessage({ lease, tooBig });
       });`,
      { eval: true, workerData: { handle, dist: new URL('../../dist/index.js', import.meta.url).href } },
    );
    const [reply] = (await withTimeout(new Promise((resolve, reject) => {
      thread.once('message', (message) => resolve([message]));
      thread.once('error', reject);
    }), 10_000, 'the thread')) as [{ lease: { jobId: string; leaseUntil: number; token: number }; tooBig: string }];
    expect(reply.lease).toMatchObject({ jobId: id, leaseUntil: T0 + 1000 });
    expect(reply.tooBig).toBe('ERR_INVALID_ARGUMENT');
    // The thread's clock is this one: its lease expires when this clock passes it, and the policy retries once.
    clock.advance(1000);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired', nextRunAt: T0 + 1000 + 100 });
    await thread.terminate();
  });

  it('refuses to share a queue connected with ioredis options it cannot copy, and attach refuses what is not a handle', async () => {
    const queue = await open({ name: fresh('unshareable'), redis: { port: redis.server.port, host: '127.0.0.1', retryStrategy: () => 100 } });
    expect(() => queue.share()).toThrow(/cannot be copied/);
    await expect(RedisJobQueue.attach({ kind: 'leasehold/shared-queue' } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('keeps queues of different names in one Redis independent, each numbering from J1', async () => {
    const clock = new ManualClock(T0);
    const a = await open({ name: fresh('a'), time: clock });
    const b = await open({ name: fresh('b'), time: clock });
    expect(await a.submit('t', 'a1')).toBe('J1');
    expect(await a.submit('t', 'a2')).toBe('J2');
    expect(await b.submit('t', 'b1')).toBe('J1');
    const lease = (await b.poll('w', 1000))!;
    expect(lease).toMatchObject({ jobId: 'J1', payload: 'b1', token: 1 });
    expect(await a.stats()).toMatchObject({ pending: 2, running: 0 });
    expect(await b.stats()).toMatchObject({ pending: 0, running: 1 });
    expect((await a.view('J1')).payload).toBe('a1');
  });

  it('lets two clients of one name share the queue', async () => {
    const name = fresh('shared');
    const clock = new ManualClock(T0);
    const producer = await open({ name, time: clock });
    const consumer = await open({ name, time: clock });
    const id = await producer.submit('t', 'hello');
    const lease = (await consumer.poll('w', 1000))!;
    expect(lease).toMatchObject({ jobId: id, payload: 'hello' });
    await consumer.complete(id, lease.token);
    expect((await producer.view(id)).status).toBe('SUCCEEDED');
  });

  it('keeps tokens increasing across a close and a reconnect', async () => {
    const name = fresh('tokens');
    const first = await open({ name });
    await first.submitMany([{ type: 't' }, { type: 't' }]);
    const before = (await first.poll('w', 1000))!.token;
    await first.close();
    const second = await open({ name });
    const after = (await second.poll('w', 1000))!;
    expect(after.jobId).toBe('J2');
    expect(after.token).toBeGreaterThan(before);
  });

  it('issues tokens past 2^32 exactly, and accepts them', async () => {
    const name = fresh('big-tokens');
    const queue = await open({ name });
    await redis.admin.set(`leasehold:{${name}}:tokenSeq`, String(2 ** 32 - 1));
    await queue.submitMany([{ type: 't' }, { type: 't' }]);
    const a = (await queue.poll('w', 1000))!;
    const b = (await queue.poll('w', 1000))!;
    expect([a.token, b.token]).toEqual([2 ** 32, 2 ** 32 + 1]);
    await queue.complete(a.jobId, a.token);
    await expect(queue.complete(b.jobId, 1)).rejects.toBeInstanceOf(StaleLeaseError);
    await queue.complete(b.jobId, b.token);
  });

  it('rejects bad arguments (never throws synchronously) and changes nothing', async () => {
    const queue = await open({ name: fresh('args') });
    const calls: Array<() => Promise<unknown>> = [
      () => queue.submit(' ', 'x'),
      () => queue.submit('t', 'x', 1.5),
      () => queue.submitMany([{ type: '' }]),
      () => queue.poll('', 1000),
      () => queue.poll('w', 0),
      () => queue.extend('J1', 1, NaN),
      () => queue.fail('J1', 1, 42 as never),
      () => queue.waitForWork(-1),
    ];
    for (const call of calls) {
      let promise: Promise<unknown> | undefined;
      expect(() => (promise = call())).not.toThrow();
      await expect(promise).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(await queue.stats()).toMatchObject({ pending: 0 });
    expect(await queue.submit('t', 'x')).toBe('J1');
  });

  it.each<[string, Partial<Connect>]>([
    ['a blank name', { name: ' ' }],
    ['a name with a brace', { name: 'a{b}' }],
    ['a missing policy', { policy: undefined as never }],
    ['a bad capacity', { capacity: 0 }],
    ['a bad clock', { time: {} as never }],
    ['a bad commandTimeoutMillis', { commandTimeoutMillis: 0 }],
    ['a null commandTimeoutMillis', { commandTimeoutMillis: null as never }],
    ['a null capacity', { capacity: null as never }],
    ['a misspelt option', { capacty: 8 } as never],
    ['an option of the shared-memory queue only', { arenaBytes: 1 << 20 } as never],
    ['a URL whose port is past 65535', { redis: 'redis://127.0.0.1:99999' }],
    ['a cluster node that is null', { redis: { cluster: [null as never] } }],
    ['a cluster node without a port', { redis: { cluster: [{ host: '127.0.0.1' } as never] } }],
    ['a cluster node whose port is a string', { redis: { cluster: [{ host: '127.0.0.1', port: '7000' as never }] } }],
  ])('refuses to connect with %s', async (_what, options) => {
    const connecting = RedisJobQueue.connect({ redis: redis.server.url, name: fresh('bad'), policy: new RetryPolicy(1, 0, 0), ...options });
    await expect(connecting).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('names the unknown option and the known ones, and refuses an array of options', async () => {
    const options = { redis: redis.server.url, name: fresh('bad'), policy: new RetryPolicy(1, 0, 0) };
    const misspelt = await thrownBy(() => RedisJobQueue.connect({ ...options, capacty: 8 } as never));
    expect(misspelt).toBeInstanceOf(InvalidArgumentError);
    expect((misspelt as Error).message).toMatch(/no keys but redis, name, policy, time, commandTimeoutMillis, tracing, capacity, .*retain, got `capacty`/);
    const array = await thrownBy(() => RedisJobQueue.connect(Object.assign([], options) as never));
    expect((array as Error).message).toContain('`options` to be an object, got an array');
  });

  it('claims every one of 2000 jobs exactly once among 4 clients racing poll', async () => {
    const name = fresh('race');
    const queues = await Promise.all(Array.from({ length: 4 }, () => open({ name, time: systemClock })));
    const ids = await queues[0]!.submitMany(Array.from({ length: 2000 }, (_, i) => ({ type: 't', payload: String(i) })));
    const claims = await Promise.all(queues.map(async (queue, q) => {
      const mine: Array<{ jobId: string; token: number; payload: string | Uint8Array }> = [];
      for (let lease = await queue.poll(`w${q}`, 60_000); lease !== undefined; lease = await queue.poll(`w${q}`, 60_000)) {
        mine.push(lease);
        await queue.complete(lease.jobId, lease.token);
      }
      return mine;
    }));
    const all = claims.flat();
    expect(all).toHaveLength(2000);
    expect(new Set(all.map((c) => c.jobId)).size).toBe(2000);
    expect(new Set(all.map((c) => c.token)).size).toBe(2000);
    for (const claim of all) expect(claim.payload).toBe(String(ids.indexOf(claim.jobId)));
    expect(claims.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
    expect(await queues[0]!.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 2000 });
  });

  it("refuses a zombie's complete after its lease expired and the job was leased again", async () => {
    const clock = new ManualClock(T0);
    const name = fresh('zombie');
    const zombie = await open({ name, time: clock });
    const live = await open({ name, time: clock });
    const id = await zombie.submit('t', '');
    const old = (await zombie.poll('zombie', 1000))!;
    clock.advance(1000);
    const current = (await live.poll('live', 1000))!;
    expect(current).toMatchObject({ jobId: id, attempt: 2 });
    await expect(zombie.complete(id, old.token)).rejects.toBeInstanceOf(StaleLeaseError);
    await live.complete(id, current.token);
    expect(await live.view(id)).toMatchObject({ status: 'SUCCEEDED', workerId: 'live' });
  });

  it('refuses a complete that arrives at leaseUntil even though no call ran in between (no sweeper)', async () => {
    const clock = new ManualClock(T0);
    const name = fresh('expiry');
    const queue = await open({ name, time: clock });
    const id = await queue.submit('t', '');
    const lease = (await queue.poll('w', 1000))!;
    clock.advance(1000);
    // Nothing ran since the poll: in Redis the job is still RUNNING; the complete's own script expires it.
    expect(await redis.admin.hget(`leasehold:{${name}}:job:1`, 'status')).toBe('RUNNING');
    await expect(queue.complete(id, lease.token)).rejects.toBeInstanceOf(StaleLeaseError);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired', nextRunAt: T0 + 1000 });
  });

  it('wakes a worker in waitForWork when another client submits', async () => {
    const name = fresh('wake');
    const worker = await open({ name });
    const producer = await open({ name });
    expect(await worker.poll('w', 1000)).toBeUndefined();
    const waiting = worker.waitForWork(30_000);
    // Once it has subscribed, the submit's wake-up can only come as a message.
    await waitUntil('the worker subscribed', async () => ((await redis.admin.call('PUBSUB', 'NUMSUB', `leasehold:{${name}}:signal`)) as [string, number])[1] >= 1);
    await producer.submit('t', 'x');
    expect(await withTimeout(waiting, 5000, 'waitForWork')).toBe(true);
    expect((await worker.poll('w', 1000))?.payload).toBe('x');
  });

  it('returns from waitForWork at once if work arrived since the poll, and false on timeout otherwise', async () => {
    const name = fresh('wait');
    const worker = await open({ name });
    const producer = await open({ name });
    expect(await worker.poll('w', 1000)).toBeUndefined();
    await producer.submit('t', 'x');
    expect(await withTimeout(worker.waitForWork(30_000), 5000, 'waitForWork')).toBe(true);
    await worker.poll('w', 1000);
    expect(await worker.waitForWork(20)).toBe(false);
  });

  it.each([Infinity, 2 ** 31, 2 ** 53])('waits in waitForWork(%s) until woken: a wait past the longest timer does not end at once', async (timeoutMillis) => {
    const name = fresh('unbounded');
    const worker = await open({ name });
    const producer = await open({ name });
    expect(await worker.poll('w', 1000)).toBeUndefined();
    let settled: boolean | undefined;
    const waiting = worker.waitForWork(timeoutMillis).then((woken) => (settled = woken));
    await pause(300);
    expect(settled).toBeUndefined();
    await producer.submit('t', 'x');
    expect(await withTimeout(waiting, 5000, 'waitForWork')).toBe(true);
  });
});

describeRedis('RedisJobQueue when Redis fails', () => {
  const redis = privateRedis();
  const { open } = redis;

  it('brings back every acknowledged job, in its state, after Redis is killed (SIGKILL) and restarted', async () => {
    const clock = new ManualClock(T0);
    const name = fresh('aof');
    const queue = await open({ name, time: clock, policy: new RetryPolicy(1, 0, 0) });
    const ids = await queue.submitMany([
      { type: 'ready', payload: 'é😀' }, { type: 'delayed', runAtMillis: T0 + 5000 }, { type: 'running', priority: 9 },
      { type: 'succeeded', priority: 8 }, { type: 'dead', priority: 7 }, { type: 'cancelled' },
    ]);
    const running = (await queue.poll('w', 60_000))!;
    await queue.complete(ids[3]!, (await queue.poll('w', 1000))!.token);
    await queue.fail(ids[4]!, (await queue.poll('w', 1000))!.token, 'poison');
    await queue.cancel(ids[5]!);
    const views = async (q: RedisJobQueue): Promise<JobView[]> => Promise.all(ids.map((id) => q.view(id)));
    const before = { views: await views(queue), stats: await queue.stats(), dead: await queue.deadLetters() };

    await redis.server.kill();
    await redis.server.restart();

    const after = await open({ name, time: clock, policy: new RetryPolicy(1, 0, 0) });
    expect({ views: await views(after), stats: await after.stats(), dead: await after.deadLetters() }).toEqual(before);
    await after.complete(running.jobId, running.token); // the lease survived too
    expect(await after.submit('t', 'next')).toBe('J7');
    expect((await after.poll('w', 1000))!.token).toBeGreaterThan(running.token);
    // The first client reconnects by itself.
    expect(await once(() => queue.view(ids[0]!))).toMatchObject({ status: 'RUNNING', workerId: 'w' });
  });

  it('rejects every call at once with BackendUnavailableError while Redis is down, and works again after', async () => {
    const name = fresh('down');
    const queue = await open({ name });
    await queue.submit('t', 'kept');
    await redis.server.kill();
    const calls: Array<() => Promise<unknown>> = [
      () => queue.submit('t', 'x'), () => queue.submitMany([{ type: 't' }]), () => queue.poll('w', 1000),
      () => queue.complete('J1', 1), () => queue.fail('J1', 1), () => queue.extend('J1', 1, 1000), () => queue.view('J1'),
      () => queue.deadLetters(), () => queue.retryDead('J1'), () => queue.cancel('J1'), () => queue.queueDepth(),
      () => queue.dlqDepth(), () => queue.stats(), () => queue.waitForWork(1000),
    ];
    for (const call of calls) await expectUnavailable(call());
    await expect(RedisJobQueue.connect({ redis: redis.server.url, name, policy: new RetryPolicy(1, 0, 0) })).rejects.toBeInstanceOf(BackendUnavailableError);
    await redis.server.restart();
    expect(await once(() => queue.stats())).toMatchObject({ pending: 1 });
  });

  it('rejects a call whose connection drops in flight, and never sends it again', async () => {
    const name = fresh('in-flight');
    const queue = await open({ name });
    await redis.admin.call('CLIENT', 'PAUSE', 5000, 'WRITE'); // the submit below waits in Redis, unexecuted
    const submitting = expectUnavailable(queue.submit('t', 'lost'));
    await waitUntil('the submit is held in Redis', async () => /blocked_clients:[1-9]/.test(await redis.admin.info('clients')));
    await redis.admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    const error = await submitting;
    expect(error.message).toMatch(/may or may not have taken effect/);
    await redis.admin.call('CLIENT', 'UNPAUSE');
    // Reconnected, the client did not resend the submit: no job, and the next id is J1.
    expect(await once(() => queue.stats())).toMatchObject({ pending: 0 });
    expect(await queue.submit('t', 'next')).toBe('J1');
  });

  it('never leases a job twice when a poll reply is lost: that lease just expires', async () => {
    const clock = new ManualClock(T0);
    const name = fresh('lost-poll');
    const impatient = await open({ name, time: clock, commandTimeoutMillis: 100 });
    const other = await open({ name, time: clock });
    expect(await impatient.poll('w', 1000)).toBeUndefined(); // Redis knows the script now
    const id = await other.submit('t', '');
    await redis.admin.call('CLIENT', 'PAUSE', 500, 'WRITE'); // the poll runs only after its caller gave up on the reply
    await expectUnavailable(impatient.poll('w', 1000));
    expect(await once(() => other.view(id))).toMatchObject({ status: 'RUNNING', workerId: 'w', attempts: 1 });
    expect(await other.poll('w2', 1000)).toBeUndefined();
    clock.advance(1000);
    expect(await other.poll('w2', 1000)).toMatchObject({ jobId: id, attempt: 2 });
  });

  it('refuses a database the server does not have with InvalidArgumentError, and writes nothing to database 0', async () => {
    const name = 'no-such-db';
    for (const target of [`${redis.server.url}/99`, { url: redis.server.url, db: 99 }]) {
      const error = await thrownBy(() => RedisJobQueue.connect({ redis: target, name, policy: new RetryPolicy(1, 0, 0) }));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as InvalidArgumentError).message).toMatch(/has no database 99 to use: ERR DB index is out of range/);
    }
    expect(await redis.admin.keys(`leasehold:{${name}}:*`)).toEqual([]);
    const inThree = await open({ redis: `${redis.server.url}/3`, name });
    await inThree.submit('t', 'p');
    expect(await redis.admin.keys(`leasehold:{${name}}:*`)).toEqual([]);
  });

  it('refuses to connect to a port where no Redis answers, promptly', async () => {
    const down = await startRedis();
    await down.stop();
    const connecting = RedisJobQueue.connect({ redis: down.url, name: 'nobody', policy: new RetryPolicy(1, 0, 0) });
    const error = await expectUnavailable(connecting, 5000);
    expect(error.message).toMatch(/Could not connect to Redis at 127.0.0.1:/);
  });
});
