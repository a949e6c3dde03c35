import { describe, expect, it } from 'vitest';
import {
  IllegalStateError,
  InvalidArgumentError,
  JobNotFoundError,
  JobQueue,
  JobQueueError,
  ManualClock,
  QueueFullError,
  RetryPolicy,
  StaleLeaseError,
} from '../../dist/index.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { T0, bad, throwsWhenRead, unreadable, expectError, expectIllegalStateSync, expectNoChange, expectNotFound, mustPoll, setup, snapshot, thrownBy } from '../support/helpers.js';

/**
 * Small queues for the many parametrized cases below: a default queue commits
 * about a megabyte of shared memory that the garbage collector is slow to reclaim.
 */
const SMALL = { capacity: 256 };

describeEachBackend('error classes', (backend) => {
  const table: Array<[string, abstract new (...args: never[]) => Error, string, () => Promise<unknown>]> = [
    ['InvalidArgumentError', InvalidArgumentError, 'ERR_INVALID_ARGUMENT', async () => (await setup(backend)).queue.submit('', 'p')],
    ['JobNotFoundError', JobNotFoundError, 'ERR_JOB_NOT_FOUND', async () => (await setup(backend)).queue.view('J999')],
    [
      'IllegalStateError',
      IllegalStateError,
      'ERR_ILLEGAL_STATE',
      async () => {
        const { queue } = await setup(backend);
        await queue.retryDead(await queue.submit('t', 'p'));
      },
    ],
    [
      'StaleLeaseError',
      StaleLeaseError,
      'ERR_STALE_LEASE',
      async () => {
        const { queue } = await setup(backend);
        await queue.complete(await queue.submit('t', 'p'), 1);
      },
    ],
    [
      'QueueFullError',
      QueueFullError,
      'ERR_QUEUE_FULL',
      async () => {
        const { queue } = await setup(backend, { options: { capacity: 1 } });
        await queue.submit('t', 'a');
        await queue.submit('t', 'b');
      },
    ],
  ];

  it.each(table)('%s is exported, extends JobQueueError and Error, and carries its code', async (name, cls, code, trigger) => {
    expect(typeof cls).toBe('function');
    const error = await thrownBy(trigger);
    expect(error).toBeInstanceOf(cls);
    expect(error).toBeInstanceOf(JobQueueError);
    expect(error).toBeInstanceOf(Error);
    expect((error as JobQueueError).code).toBe(code);
    expect((error as Error).name).toBe(name);
    expect(typeof (error as Error).message).toBe('string');
    expect((error as Error).message.length).toBeGreaterThan(0);
  });

  it('keeps the classes apart: each error is only its own kind', async () => {
    const notFound = await expectNotFound(async () => (await setup(backend)).queue.view('J1'));
    expect(notFound).not.toBeInstanceOf(IllegalStateError);
    expect(notFound).not.toBeInstanceOf(InvalidArgumentError);
    const invalid = await expectError(async () => (await setup(backend)).queue.poll('', 1), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    expect(invalid).not.toBeInstanceOf(IllegalStateError);
    expect(invalid).not.toBeInstanceOf(JobNotFoundError);
    const illegal = await expectError(
      async () => {
        const { queue } = await setup(backend);
        const id = await queue.submit('t', '');
        await queue.cancel(id);
        await queue.cancel(id);
      },
      IllegalStateError,
      'ERR_ILLEGAL_STATE',
    );
    expect(illegal).not.toBeInstanceOf(StaleLeaseError);
  });

  it('names the id in a JobNotFoundError', async () => {
    expect((await expectNotFound(async () => (await setup(backend)).queue.view('J4242'))).message).toContain('J4242');
  });
});

describe('error classes', () => {
  it('makes StaleLeaseError a kind of IllegalStateError', () => {
    expect(StaleLeaseError.prototype).toBeInstanceOf(IllegalStateError);
    expect(IllegalStateError.prototype).toBeInstanceOf(JobQueueError);
    expect(JobQueueError.prototype).toBeInstanceOf(Error);
  });
});

describeEachBackend('unknown job ids', (backend) => {
  const ids = [
    'J999',
    'J4', // the next id, not yet issued
    'x',
    'J0',
    '',
    'J',
    'J01',
    'J001',
    ' J1',
    'J1 ',
    'j1',
    'J-1',
    'J+1',
    'J1.0',
    'J1e0',
    'J 1',
    'J0x1',
    '1',
    'J\u0661', // ARABIC-INDIC DIGIT ONE
    'J99999999999999999999',
    'J4294967297', // 2^32 + 1: must not wrap to J1
  ];

  /** Three jobs: J1 RUNNING (so lax parsing of "J01" would find a live lease), J2 DEAD, J3 PENDING. */
  async function threeJobs() {
    const s = await setup(backend, { maxAttempts: 1, options: SMALL });
    await s.queue.submit('t', 'one', 9); // J1
    await s.queue.submit('t', 'two', 5); // J2
    await s.queue.submit('t', 'three'); // J3
    const dead = await mustPoll(s.queue, 'J1');
    await s.queue.fail('J1', dead.token, 'x');
    await s.queue.retryDead('J1');
    const lease = await mustPoll(s.queue, 'J1', 1_000_000);
    await s.queue.fail('J2', (await mustPoll(s.queue, 'J2')).token, 'dead');
    return { ...s, token: lease.token };
  }

  const ops: Array<[string, (q: ContractQueue, id: string, token: number) => unknown]> = [
    ['view', (q, id) => q.view(id)],
    ['complete', (q, id, t) => q.complete(id, t)],
    ['fail', (q, id, t) => q.fail(id, t, 'x')],
    ['extend', (q, id, t) => q.extend(id, t, 1000)],
    ['retryDead', (q, id) => q.retryDead(id)],
    ['cancel', (q, id) => q.cancel(id)],
  ];

  describe.each(ops)('%s', (_name, op) => {
    it.each(ids)('throws JobNotFoundError for %j and changes nothing', async (id) => {
      const { queue, token } = await threeJobs();
      const error = await expectNoChange(queue, ['J1', 'J2', 'J3', 'J4'], () => op(queue, id, token), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
      expect(error).not.toBeInstanceOf(IllegalStateError);
      expect((await queue.view('J1')).status).toBe('RUNNING');
    });
  });

  it('checks the id before the state (never IllegalState/StaleLease for an unknown id)', async () => {
    const { queue, token } = await threeJobs();
    // Each of these would be a state error on an existing job in that state.
    await expectNotFound(() => queue.retryDead('J77'));
    await expectNotFound(() => queue.cancel('J77'));
    await expectNotFound(() => queue.complete('J77', token));
    await expectNotFound(() => queue.complete('J77', 0));
    await expectNotFound(() => queue.fail('J77', 12345, null));
    await expectNotFound(() => queue.extend('J77', 12345, 10));
  });

  it.each([42, null, undefined, {}])('refuses a non-string id %s with a JobQueueError', async (id) => {
    const { queue } = await setup(backend);
    await queue.submit('t', '');
    const error = await thrownBy(() => queue.view(bad(id)));
    expect(error).toBeInstanceOf(JobQueueError);
    expect(['ERR_JOB_NOT_FOUND', 'ERR_INVALID_ARGUMENT']).toContain((error as JobQueueError).code);
  });
});

/** Throws null, a thrown value with no message at all. */
function throwNull(): never {
  throw null;
}

describeEachBackend('a failed call changes nothing', (backend) => {
  /**
   * J1 PENDING ready, J2 PENDING delayed, J3 RUNNING, J4 SUCCEEDED, J5 DEAD,
   * J6 CANCELLED, J7 PENDING waiting out a retry.
   */
  async function everyState() {
    const s = await setup(backend, { maxAttempts: 2, options: SMALL });
    const { queue, clock } = s;
    await queue.submit('t', 'ready'); // J1
    await queue.submit('t', 'delayed', 0, T0 + 1_000_000); // J2
    await queue.submit('t', 'running', 9); // J3
    await queue.submit('t', 'succeeded', 8); // J4
    await queue.submit('t', 'dead', 7); // J5
    await queue.submit('t', 'cancelled'); // J6
    await queue.submit('t', 'retrying', 6); // J7
    const running = await mustPoll(queue, 'J3', 1_000_000);
    const succeeded = await mustPoll(queue, 'J4');
    await queue.complete('J4', succeeded.token);
    await queue.fail('J5', (await mustPoll(queue, 'J5')).token, 'first');
    clock.advance(100);
    const dead = await mustPoll(queue, 'J5');
    await queue.fail('J5', dead.token, 'second');
    const retrying = await mustPoll(queue, 'J7');
    await queue.fail('J7', retrying.token, 'retry me');
    await queue.cancel('J6');
    return { ...s, running: running.token, succeeded: succeeded.token, dead: dead.token, retrying: retrying.token };
  }

  const IDS = ['J1', 'J2', 'J3', 'J4', 'J5', 'J6', 'J7', 'J8'];

  it('sets up every state (sanity)', async () => {
    const { queue } = await everyState();
    const statuses: string[] = [];
    for (const id of IDS.slice(0, 7)) statuses.push((await queue.view(id)).status);
    expect(statuses).toEqual([
      'PENDING',
      'PENDING',
      'RUNNING',
      'SUCCEEDED',
      'DEAD',
      'CANCELLED',
      'PENDING',
    ]);
    expect((await queue.view('J2')).nextRunAt).toBeGreaterThan(T0 + 100);
    expect(await queue.view('J7')).toMatchObject({ attempts: 1, lastError: 'retry me' });
    expect(await queue.stats()).toEqual({ pending: 3, ready: 1, delayed: 2, running: 1, succeeded: 1, dead: 1, cancelled: 1, paused: false });
    expect((await snapshot(queue, IDS)).views['J8']).toEqual({ error: 'ERR_JOB_NOT_FOUND' });
  });

  type Env = Awaited<ReturnType<typeof everyState>>;
  const failing: Array<[string, (e: Env) => unknown, abstract new (...args: never[]) => Error, string]> = [
    ['submit with a blank type', (e) => e.queue.submit(' ', 'x'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with a non-integer priority', (e) => e.queue.submit('t', 'x', 0.5), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with a NaN runAt', (e) => e.queue.submit('t', 'x', 0, NaN), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with an ill-formed payload', (e) => e.queue.submit('t', 'a\ud800'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with a non-string type', (e) => e.queue.submit(bad(7), 'x'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with options a proxy throws on as they are read', (e) => e.queue.submit('t', 'x', unreadable()), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with options whose getter throws', (e) => e.queue.submit('t', 'x', unreadable('priority')), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submitMany with a job whose getter throws', (e) => e.queue.submitMany([{ type: 't' }, unreadable('type')]), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with headers a proxy throws on', (e) => e.queue.submit('t', 'x', { headers: unreadable() }), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submitMany with a jobs array a proxy throws on', (e) => e.queue.submitMany(new Proxy([{ type: 't' }], { has: throwsWhenRead })), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['jobs with a query a proxy throws on', (e) => e.queue.jobs(unreadable()), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['poll with a blank worker', (e) => e.queue.poll('', 1000), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['poll with leaseMillis 0', (e) => e.queue.poll('w', 0), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['poll with leaseMillis NaN', (e) => e.queue.poll('w', NaN), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['complete with a result whose toJSON throws a value that is no Error', (e) => e.queue.complete('J3', e.running, { toJSON: () => throwNull() }), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['complete RUNNING with a wrong token', (e) => e.queue.complete('J3', e.running + 1), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['complete PENDING', (e) => e.queue.complete('J1', e.running), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['complete SUCCEEDED with its old token', (e) => e.queue.complete('J4', e.succeeded), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['complete DEAD with its old token', (e) => e.queue.complete('J5', e.dead), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['complete CANCELLED', (e) => e.queue.complete('J6', e.running), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['complete a retrying job with its old token', (e) => e.queue.complete('J7', e.retrying), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['complete an unknown id', (e) => e.queue.complete('J999', e.running), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
    ['complete with a fractional token', (e) => e.queue.complete('J3', 1.5), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['fail RUNNING with a wrong token', (e) => e.queue.fail('J3', e.running + 1, 'x'), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['fail with a non-string error', (e) => e.queue.fail('J3', e.running, bad(42)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['fail with options whose getter throws', (e) => e.queue.fail('J3', e.running, 'x', unreadable('permanent')), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['fail SUCCEEDED', (e) => e.queue.fail('J4', e.succeeded, 'x'), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['fail DEAD', (e) => e.queue.fail('J5', e.dead), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['fail an unknown id', (e) => e.queue.fail('J0', e.running), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
    ['extend with leaseMillis 0', (e) => e.queue.extend('J3', e.running, 0), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['extend with leaseMillis NaN', (e) => e.queue.extend('J3', e.running, NaN), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['extend with leaseMillis Infinity', (e) => e.queue.extend('J3', e.running, Infinity), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['extend with a wrong token', (e) => e.queue.extend('J3', e.running + 1, 1000), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['extend DEAD', (e) => e.queue.extend('J5', e.dead, 1000), StaleLeaseError, 'ERR_STALE_LEASE'],
    ['extend an unknown id', (e) => e.queue.extend('x', e.running, 1000), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
    ['retryDead PENDING', (e) => e.queue.retryDead('J1'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['retryDead delayed', (e) => e.queue.retryDead('J2'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['retryDead RUNNING', (e) => e.queue.retryDead('J3'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['retryDead SUCCEEDED', (e) => e.queue.retryDead('J4'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['retryDead CANCELLED', (e) => e.queue.retryDead('J6'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['retryDead retrying', (e) => e.queue.retryDead('J7'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['retryDead an unknown id', (e) => e.queue.retryDead('J999'), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
    ['remove RUNNING', (e) => e.queue.remove('J3'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['remove an unknown id', (e) => e.queue.remove('J999'), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
    ['cancel SUCCEEDED', (e) => e.queue.cancel('J4'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['cancel DEAD', (e) => e.queue.cancel('J5'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['cancel CANCELLED', (e) => e.queue.cancel('J6'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['cancel an unknown id', (e) => e.queue.cancel('J01'), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
    ['view an unknown id', (e) => e.queue.view('J8'), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
  ];

  it.each(failing)('%s', async (_name, call, cls, code) => {
    const env = await everyState();
    await expectNoChange(env.queue, IDS, () => call(env), cls, code);
    // The lease survived, the id sequence did not move, and the queue still works.
    await env.queue.complete('J3', env.running);
    expect(await env.queue.submit('t', 'next')).toBe('J8');
    expect((await mustPoll(env.queue)).jobId).toBe('J1');
  });

  it('survives all the failing calls in a row', async () => {
    const env = await everyState();
    const before = await snapshot(env.queue, IDS);
    for (const [, call, cls, code] of failing) await expectError(() => call(env), cls, code);
    expect(await snapshot(env.queue, IDS)).toEqual(before);
    await env.queue.complete('J3', env.running);
    expect(await env.queue.submit('t', 'next')).toBe('J8');
  });
});

describeEachBackend('a closed queue', (backend) => {
  it('refuses every method with IllegalStateError', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    const lease = await mustPoll(queue, 'J1');
    await queue.close();
    const calls: Array<[string, () => unknown]> = [
      ['submit', () => queue.submit('t', 'c')],
      ['submitMany', () => queue.submitMany([{ type: 't', payload: 'd' }])],
      ['poll', () => queue.poll('w', 1000)],
      ['complete', () => queue.complete('J1', lease.token)],
      ['fail', () => queue.fail('J1', lease.token, 'x')],
      ['extend', () => queue.extend('J1', lease.token, 1000)],
      ['view', () => queue.view('J1')],
      ['deadLetters', () => queue.deadLetters()],
      ['retryDead', () => queue.retryDead('J1')],
      ['cancel', () => queue.cancel('J2')],
      ['queueDepth', () => queue.queueDepth()],
      ['dlqDepth', () => queue.dlqDepth()],
      ['stats', () => queue.stats()],
    ];
    for (const [name, call] of calls) {
      const error = await thrownBy(call);
      expect(error, name).toBeInstanceOf(IllegalStateError);
      expect((error as JobQueueError).code, name).toBe('ERR_ILLEGAL_STATE');
    }
  });
});

describe('a closed queue (shared memory only)', () => {
  it('refuses share() with IllegalStateError', () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 100, 1000));
    queue.close();
    expectIllegalStateSync(() => queue.share());
  });
});
