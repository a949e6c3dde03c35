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
} from '../dist/index.js';
import { T0, bad, expectError, expectNoChange, expectNotFound, mustPoll, setup, snapshot, thrownBy } from './helpers.js';

type Queue = InstanceType<typeof JobQueue>;

/**
 * Small queues for the many parametrized cases below: a default queue commits
 * about a megabyte of shared memory that the garbage collector is slow to reclaim.
 */
const SMALL = { capacity: 256 };

describe('error classes', () => {
  const table: Array<[string, abstract new (...args: never[]) => Error, string, () => unknown]> = [
    ['InvalidArgumentError', InvalidArgumentError, 'ERR_INVALID_ARGUMENT', () => setup().queue.submit('', 'p')],
    ['JobNotFoundError', JobNotFoundError, 'ERR_JOB_NOT_FOUND', () => setup().queue.view('J999')],
    [
      'IllegalStateError',
      IllegalStateError,
      'ERR_ILLEGAL_STATE',
      () => {
        const { queue } = setup();
        queue.retryDead(queue.submit('t', 'p'));
      },
    ],
    [
      'StaleLeaseError',
      StaleLeaseError,
      'ERR_STALE_LEASE',
      () => {
        const { queue } = setup();
        queue.complete(queue.submit('t', 'p'), 1);
      },
    ],
    [
      'QueueFullError',
      QueueFullError,
      'ERR_QUEUE_FULL',
      () => {
        const { queue } = setup({ options: { capacity: 1 } });
        queue.submit('t', 'a');
        queue.submit('t', 'b');
      },
    ],
  ];

  it.each(table)('%s is exported, extends JobQueueError and Error, and carries its code', (name, cls, code, trigger) => {
    expect(typeof cls).toBe('function');
    const error = thrownBy(trigger);
    expect(error).toBeInstanceOf(cls);
    expect(error).toBeInstanceOf(JobQueueError);
    expect(error).toBeInstanceOf(Error);
    expect((error as JobQueueError).code).toBe(code);
    expect((error as Error).name).toBe(name);
    expect(typeof (error as Error).message).toBe('string');
    expect((error as Error).message.length).toBeGreaterThan(0);
  });

  it('makes StaleLeaseError a kind of IllegalStateError', () => {
    expect(StaleLeaseError.prototype).toBeInstanceOf(IllegalStateError);
    expect(IllegalStateError.prototype).toBeInstanceOf(JobQueueError);
    expect(JobQueueError.prototype).toBeInstanceOf(Error);
  });

  it('keeps the classes apart: each error is only its own kind', () => {
    const notFound = expectNotFound(() => setup().queue.view('J1'));
    expect(notFound).not.toBeInstanceOf(IllegalStateError);
    expect(notFound).not.toBeInstanceOf(InvalidArgumentError);
    const invalid = expectError(() => setup().queue.poll('', 1), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    expect(invalid).not.toBeInstanceOf(IllegalStateError);
    expect(invalid).not.toBeInstanceOf(JobNotFoundError);
    const illegal = expectError(
      () => {
        const { queue } = setup();
        const id = queue.submit('t', '');
        queue.cancel(id);
        queue.cancel(id);
      },
      IllegalStateError,
      'ERR_ILLEGAL_STATE',
    );
    expect(illegal).not.toBeInstanceOf(StaleLeaseError);
  });

  it('names the id in a JobNotFoundError', () => {
    expect(expectNotFound(() => setup().queue.view('J4242')).message).toContain('J4242');
  });
});

describe('unknown job ids', () => {
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
  function threeJobs() {
    const s = setup({ maxAttempts: 1, options: SMALL });
    s.queue.submit('t', 'one', 9); // J1
    s.queue.submit('t', 'two', 5); // J2
    s.queue.submit('t', 'three'); // J3
    const dead = mustPoll(s.queue, 'J1');
    s.queue.fail('J1', dead.token, 'x');
    s.queue.retryDead('J1');
    const lease = mustPoll(s.queue, 'J1', 1_000_000);
    s.queue.fail('J2', mustPoll(s.queue, 'J2').token, 'dead');
    return { ...s, token: lease.token };
  }

  const ops: Array<[string, (q: Queue, id: string, token: number) => unknown]> = [
    ['view', (q, id) => q.view(id)],
    ['complete', (q, id, t) => q.complete(id, t)],
    ['fail', (q, id, t) => q.fail(id, t, 'x')],
    ['extend', (q, id, t) => q.extend(id, t, 1000)],
    ['retryDead', (q, id) => q.retryDead(id)],
    ['cancel', (q, id) => q.cancel(id)],
  ];

  describe.each(ops)('%s', (_name, op) => {
    it.each(ids)('throws JobNotFoundError for %j and changes nothing', (id) => {
      const { queue, token } = threeJobs();
      const error = expectNoChange(queue, ['J1', 'J2', 'J3', 'J4'], () => op(queue, id, token), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
      expect(error).not.toBeInstanceOf(IllegalStateError);
      expect(queue.view('J1').status).toBe('RUNNING');
    });
  });

  it('checks the id before the state (never IllegalState/StaleLease for an unknown id)', () => {
    const { queue, token } = threeJobs();
    // Each of these would be a state error on an existing job in that state.
    expectNotFound(() => queue.retryDead('J77'));
    expectNotFound(() => queue.cancel('J77'));
    expectNotFound(() => queue.complete('J77', token));
    expectNotFound(() => queue.complete('J77', 0));
    expectNotFound(() => queue.fail('J77', 12345, null));
    expectNotFound(() => queue.extend('J77', 12345, 10));
  });

  it.each([42, null, undefined, {}])('refuses a non-string id %s with a JobQueueError', (id) => {
    const { queue } = setup();
    queue.submit('t', '');
    const error = thrownBy(() => queue.view(bad(id)));
    expect(error).toBeInstanceOf(JobQueueError);
    expect(['ERR_JOB_NOT_FOUND', 'ERR_INVALID_ARGUMENT']).toContain((error as JobQueueError).code);
  });
});

describe('a failed call changes nothing', () => {
  /**
   * J1 PENDING ready, J2 PENDING delayed, J3 RUNNING, J4 SUCCEEDED, J5 DEAD,
   * J6 CANCELLED, J7 PENDING waiting out a retry.
   */
  function everyState() {
    const s = setup({ maxAttempts: 2, options: SMALL });
    const { queue, clock } = s;
    queue.submit('t', 'ready'); // J1
    queue.submit('t', 'delayed', 0, T0 + 1_000_000); // J2
    queue.submit('t', 'running', 9); // J3
    queue.submit('t', 'succeeded', 8); // J4
    queue.submit('t', 'dead', 7); // J5
    queue.submit('t', 'cancelled'); // J6
    queue.submit('t', 'retrying', 6); // J7
    const running = mustPoll(queue, 'J3', 1_000_000);
    const succeeded = mustPoll(queue, 'J4');
    queue.complete('J4', succeeded.token);
    queue.fail('J5', mustPoll(queue, 'J5').token, 'first');
    clock.advance(100);
    const dead = mustPoll(queue, 'J5');
    queue.fail('J5', dead.token, 'second');
    const retrying = mustPoll(queue, 'J7');
    queue.fail('J7', retrying.token, 'retry me');
    queue.cancel('J6');
    return { ...s, running: running.token, succeeded: succeeded.token, dead: dead.token, retrying: retrying.token };
  }

  const IDS = ['J1', 'J2', 'J3', 'J4', 'J5', 'J6', 'J7', 'J8'];

  it('sets up every state (sanity)', () => {
    const { queue } = everyState();
    expect(IDS.slice(0, 7).map((id) => queue.view(id).status)).toEqual([
      'PENDING',
      'PENDING',
      'RUNNING',
      'SUCCEEDED',
      'DEAD',
      'CANCELLED',
      'PENDING',
    ]);
    expect(queue.view('J2').nextRunAt).toBeGreaterThan(T0 + 100);
    expect(queue.view('J7')).toMatchObject({ attempts: 1, lastError: 'retry me' });
    expect(queue.stats()).toEqual({ pending: 3, ready: 1, delayed: 2, running: 1, succeeded: 1, dead: 1, cancelled: 1 });
    expect(snapshot(queue, IDS).views['J8']).toEqual({ error: 'ERR_JOB_NOT_FOUND' });
  });

  type Env = ReturnType<typeof everyState>;
  const failing: Array<[string, (e: Env) => unknown, abstract new (...args: never[]) => Error, string]> = [
    ['submit with a blank type', (e) => e.queue.submit(' ', 'x'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with a non-integer priority', (e) => e.queue.submit('t', 'x', 0.5), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with a NaN runAt', (e) => e.queue.submit('t', 'x', 0, NaN), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with an ill-formed payload', (e) => e.queue.submit('t', 'a\ud800'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['submit with a non-string type', (e) => e.queue.submit(bad(7), 'x'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['poll with a blank worker', (e) => e.queue.poll('', 1000), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['poll with leaseMillis 0', (e) => e.queue.poll('w', 0), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
    ['poll with leaseMillis NaN', (e) => e.queue.poll('w', NaN), InvalidArgumentError, 'ERR_INVALID_ARGUMENT'],
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
    ['cancel RUNNING', (e) => e.queue.cancel('J3'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['cancel SUCCEEDED', (e) => e.queue.cancel('J4'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['cancel DEAD', (e) => e.queue.cancel('J5'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['cancel CANCELLED', (e) => e.queue.cancel('J6'), IllegalStateError, 'ERR_ILLEGAL_STATE'],
    ['cancel an unknown id', (e) => e.queue.cancel('J01'), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
    ['view an unknown id', (e) => e.queue.view('J8'), JobNotFoundError, 'ERR_JOB_NOT_FOUND'],
  ];

  it.each(failing)('%s', (_name, call, cls, code) => {
    const env = everyState();
    expectNoChange(env.queue, IDS, () => call(env), cls, code);
    // The lease survived, the id sequence did not move, and the queue still works.
    env.queue.complete('J3', env.running);
    expect(env.queue.submit('t', 'next')).toBe('J8');
    expect(mustPoll(env.queue).jobId).toBe('J1');
  });

  it('survives all the failing calls in a row', () => {
    const env = everyState();
    const before = snapshot(env.queue, IDS);
    for (const [, call, cls, code] of failing) expectError(() => call(env), cls, code);
    expect(snapshot(env.queue, IDS)).toEqual(before);
    env.queue.complete('J3', env.running);
    expect(env.queue.submit('t', 'next')).toBe('J8');
  });
});

describe('a closed queue', () => {
  it('refuses every method with IllegalStateError', async () => {
    const clock = new ManualClock(T0);
    const queue = new JobQueue(clock, new RetryPolicy(3, 100, 1000));
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    const lease = mustPoll(queue, 'J1');
    await queue.close();
    const calls: Array<[string, () => unknown]> = [
      ['submit', () => queue.submit('t', 'c')],
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
      ['share', () => queue.share()],
    ];
    for (const [name, call] of calls) {
      const error = thrownBy(call);
      expect(error, name).toBeInstanceOf(IllegalStateError);
      expect((error as JobQueueError).code, name).toBe('ERR_ILLEGAL_STATE');
    }
  });
});
