import { describe, expect, it } from 'vitest';
import { IllegalStateError, JobQueueError, StaleLeaseError } from '../dist/index.js';
import {
  T0,
  bad,
  expectError,
  expectInvalid,
  expectNoChange,
  expectNotFound,
  expectStale,
  mustPoll,
  setup,
} from './helpers.js';

describe('poll', () => {
  it('records the worker of the latest lease in the view, null before the first', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', 'x');
    expect(queue.view(id).workerId).toBeNull();
    mustPoll(queue, id, 100, 'ada');
    expect(queue.view(id).workerId).toBe('ada');
    clock.advance(100 + 100); // the lease expires, the backoff passes
    mustPoll(queue, id, 100, 'grace');
    expect(queue.view(id)).toMatchObject({ workerId: 'grace', attempts: 2 });
  });

  it('makes the job RUNNING, adds an attempt and leases it until now + leaseMillis', () => {
    const { queue, clock } = setup();
    const id = queue.submit('email', 'body', 0, T0 - 50);
    clock.advance(25);
    const lease = mustPoll(queue, id, 1500);
    expect(lease).toMatchObject({ jobId: id, type: 'email', payload: 'body', attempt: 1, leaseUntil: T0 + 25 + 1500 });
    expect(Number.isSafeInteger(lease.token)).toBe(true);
    const view = queue.view(id);
    expect(view.status).toBe('RUNNING');
    expect(view.attempts).toBe(1);
    expect(view.leaseUntil).toBe(T0 + 1525);
    expect(view.nextRunAt).toBe(T0 - 50); // poll leaves runAt as it is
  });

  it('counts the attempt in the lease on every retry', () => {
    const { queue, clock } = setup({ maxAttempts: 4 });
    const id = queue.submit('t', '');
    for (let attempt = 1; attempt <= 4; attempt++) {
      clock.advance(20_000);
      const lease = mustPoll(queue, id);
      expect(lease.attempt).toBe(attempt);
      expect(queue.view(id).attempts).toBe(attempt);
      queue.fail(id, lease.token, `e${attempt}`);
    }
    expect(queue.view(id).status).toBe('DEAD');
  });

  it('returns undefined when the queue is empty', () => {
    const { queue } = setup();
    expect(queue.poll('w', 1000)).toBeUndefined();
  });

  it('returns undefined when every job is running, finished or delayed', () => {
    const { queue } = setup({ maxAttempts: 1 });
    queue.submit('t', 'running'); // J1
    queue.submit('t', 'done'); // J2
    queue.submit('t', 'cancelled'); // J3
    queue.submit('t', 'dead'); // J4
    queue.submit('t', 'delayed', 0, T0 + 10); // J5
    mustPoll(queue, 'J1', 100_000);
    const l2 = mustPoll(queue, 'J2');
    queue.complete('J2', l2.token);
    queue.cancel('J3');
    const l4 = mustPoll(queue, 'J4');
    queue.fail('J4', l4.token, 'x');
    expect(queue.poll('w', 1000)).toBeUndefined();
  });

  it('never hands a running job to a second worker', () => {
    const { queue } = setup();
    queue.submit('t', '');
    mustPoll(queue, 'J1', 1000, 'w1');
    expect(queue.poll('w2', 1000)).toBeUndefined();
  });

  it.each(['', ' ', '\t', '\n  '])('rejects the blank worker id %j with InvalidArgumentError, claiming nothing', (worker) => {
    const { queue } = setup();
    queue.submit('t', '');
    expectInvalid(() => queue.poll(worker, 1000));
    expect(queue.view('J1')).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it.each([42, null, undefined, {}])('rejects the non-string worker id %s', (worker) => {
    const { queue } = setup();
    queue.submit('t', '');
    expectInvalid(() => queue.poll(bad(worker), 1000));
    expect(queue.view('J1').status).toBe('PENDING');
  });

  it.each([0, -1, -0.5, NaN, Infinity, -Infinity])('rejects leaseMillis %s with InvalidArgumentError, claiming nothing', (ms) => {
    const { queue } = setup();
    queue.submit('t', '');
    expectInvalid(() => queue.poll('w', ms));
    expect(queue.view('J1')).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it.each(['1000', null, undefined])('rejects the non-number leaseMillis %j', (ms) => {
    const { queue } = setup();
    queue.submit('t', '');
    expectInvalid(() => queue.poll('w', bad(ms)));
  });

  it('validates its arguments even when nothing is ready', () => {
    const { queue } = setup();
    expectInvalid(() => queue.poll('', 1000));
    expectInvalid(() => queue.poll('w', 0));
  });
});

describe('tokens', () => {
  it('makes a fresh token on every poll, never repeated across jobs and retries', () => {
    const { queue, clock } = setup({ maxAttempts: 5, baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const tokens: number[] = [];
    for (let i = 0; i < 40; i++) queue.submit('t', `${i}`);
    for (let round = 0; round < 5; round++) {
      for (let lease = queue.poll('w', 1000); lease !== undefined; lease = queue.poll('w', 1000)) {
        tokens.push(lease.token);
        // Mix the endings: fail, complete and let expire.
        if (round < 4 && lease.attempt % 2 === 0) continue; // left to expire below
        if (round === 4 || lease.jobId.endsWith('7')) queue.complete(lease.jobId, lease.token);
        else queue.fail(lease.jobId, lease.token, 'again');
      }
      clock.advance(1000); // expire what was left running
    }
    expect(tokens.length).toBeGreaterThan(100);
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const t of tokens) expect(Number.isSafeInteger(t)).toBe(true);
  });

  it('gives a job a different token when it is leased again', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const first = mustPoll(queue, id, 100);
    clock.advance(100 + 100); // expire + backoff after attempt 1
    const second = mustPoll(queue, id, 100);
    expect(second.token).not.toBe(first.token);
  });

  it('does not repeat tokens after a retryDead', () => {
    const s = setup({ maxAttempts: 2 });
    const id = s.queue.submit('t', '');
    const seen = new Set<number>();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2; i++) {
        s.clock.advance(20_000);
        const lease = mustPoll(s.queue, id);
        expect(seen.has(lease.token)).toBe(false);
        seen.add(lease.token);
        s.queue.fail(id, lease.token, 'x');
      }
      expect(s.queue.view(id).status).toBe('DEAD');
      s.queue.retryDead(id);
    }
    expect(seen.size).toBe(6);
  });
});

describe('lease expiry', () => {
  it('keeps the lease valid while now < leaseUntil', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(999);
    expect(queue.view(id).status).toBe('RUNNING');
    queue.complete(id, lease.token);
    expect(queue.view(id).status).toBe('SUCCEEDED');
  });

  it('expires the lease when now == leaseUntil', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(1000);
    expect(clock.now()).toBe(lease.leaseUntil);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired', leaseUntil: null });
    expectStale(() => queue.complete(id, lease.token));
  });

  it('counts an expired lease as a failed attempt at leaseUntil, not at now', () => {
    const { queue, clock, policy } = setup(); // backoff 100, 200, 400 ...
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(50_000); // well past leaseUntil and past the backoff
    const view = queue.view(id);
    expect(view.status).toBe('PENDING');
    expect(view.lastError).toBe('lease expired');
    expect(view.attempts).toBe(1);
    expect(view.nextRunAt).toBe(lease.leaseUntil + policy.backoffAfter(1));
    expect(view.nextRunAt).toBe(T0 + 1000 + 100);
  });

  it('uses the backoff of the attempt that expired', () => {
    const { queue, clock, policy } = setup({ maxAttempts: 4 });
    const id = queue.submit('t', '');
    mustPoll(queue, id, 1000);
    clock.advance(60_000);
    const second = mustPoll(queue, id, 700);
    expect(second.attempt).toBe(2);
    clock.advance(60_000);
    expect(queue.view(id).nextRunAt).toBe(second.leaseUntil + policy.backoffAfter(2));
    expect(queue.view(id).nextRunAt).toBe(second.leaseUntil + 200);
  });

  it('makes the job DEAD when the last attempt expires', () => {
    const { queue, clock } = setup({ maxAttempts: 1 });
    const id = queue.submit('t', '');
    mustPoll(queue, id, 1000);
    clock.advance(1000);
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: 'lease expired' });
    expect(queue.dlqDepth()).toBe(1);
    expect(queue.deadLetters().map((v) => v.id)).toEqual([id]);
  });

  it('processes several expiries, each at its own leaseUntil', () => {
    const { queue, clock } = setup({ maxAttempts: 3 });
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    const a = mustPoll(queue, 'J1', 300);
    const b = mustPoll(queue, 'J2', 7000);
    clock.advance(100_000);
    expect(queue.view('J1').nextRunAt).toBe(a.leaseUntil + 100);
    expect(queue.view('J2').nextRunAt).toBe(b.leaseUntil + 100);
  });

  it('lets an expired job be polled again once its backoff is over', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const first = mustPoll(queue, id, 1000);
    clock.advance(1000); // expired at T0+1000, runAt T0+1100
    expect(queue.poll('w', 1000)).toBeUndefined();
    clock.advance(99);
    expect(queue.poll('w', 1000)).toBeUndefined();
    clock.advance(1);
    const second = mustPoll(queue, id, 1000);
    expect(second.attempt).toBe(2);
    expect(second.token).not.toBe(first.token);
  });

  it('hands an expired job out again at once when the backoff is 0', () => {
    const { queue, clock } = setup({ baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = queue.submit('t', '');
    const first = mustPoll(queue, id, 1000);
    clock.advance(1000);
    const second = mustPoll(queue, id, 1000);
    expect(second.attempt).toBe(2);
    expect(second.token).not.toBe(first.token);
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', nextRunAt: T0 + 1000, lastError: 'lease expired' });
  });

  const reads: Array<[string, (s: ReturnType<typeof setup>, id: string) => unknown]> = [
    ['view', (s, id) => expect(s.queue.view(id)).toMatchObject({ status: 'PENDING', lastError: 'lease expired', leaseUntil: null })],
    ['stats', (s) => expect(s.queue.stats()).toMatchObject({ running: 0, pending: 1 })],
    ['queueDepth', (s) => expect(s.queue.queueDepth()).toBe(1)],
    ['poll', (s, id) => expect(mustPoll(s.queue, id).attempt).toBe(2)],
  ];
  it.each(reads)('has processed the expiry before %s, as the first call after the clock moved', (_name, check) => {
    const s = setup();
    const id = s.queue.submit('t', '');
    mustPoll(s.queue, id, 1000);
    s.clock.advance(5000);
    check(s, id);
  });

  const deadReads: Array<[string, (s: ReturnType<typeof setup>, id: string) => unknown]> = [
    ['dlqDepth', (s) => expect(s.queue.dlqDepth()).toBe(1)],
    ['deadLetters', (s, id) => expect(s.queue.deadLetters().map((v) => v.id)).toEqual([id])],
    ['stats', (s) => expect(s.queue.stats()).toMatchObject({ running: 0, dead: 1 })],
    ['retryDead', (s, id) => s.queue.retryDead(id)],
    ['cancel (refused: the job is DEAD)', (s, id) => expectError(() => s.queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE')],
  ];
  it.each(deadReads)('has processed a dead-lettering expiry before %s', (_name, check) => {
    const s = setup({ maxAttempts: 1 });
    const id = s.queue.submit('t', '');
    mustPoll(s.queue, id, 1000);
    s.clock.advance(1000);
    check(s, id);
  });

  it('has processed the expiry before cancel (the job is PENDING again, so cancel works)', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    mustPoll(queue, id, 1000);
    clock.advance(1000);
    queue.cancel(id);
    expect(queue.view(id).status).toBe('CANCELLED');
  });

  it('does not let a late fail overwrite the expiry or count a second attempt', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(1500);
    expectStale(() => queue.fail(id, lease.token, 'late'));
    expect(queue.view(id)).toMatchObject({ attempts: 1, lastError: 'lease expired', nextRunAt: T0 + 1100 });
  });
});

describe('stale leases', () => {
  function running() {
    const s = setup();
    const id = s.queue.submit('t', '');
    const lease = mustPoll(s.queue, id, 1000);
    return { ...s, id, lease };
  }

  it('is a StaleLeaseError that is also an IllegalStateError with code ERR_STALE_LEASE', () => {
    const { queue, id, lease } = running();
    const error = expectStale(() => queue.complete(id, lease.token + 1));
    expect(error).toBeInstanceOf(IllegalStateError);
    expect(error).toBeInstanceOf(JobQueueError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('StaleLeaseError');
  });

  const ops: Array<[string, (q: ReturnType<typeof setup>['queue'], id: string, token: number) => unknown]> = [
    ['complete', (q, id, t) => q.complete(id, t)],
    ['fail', (q, id, t) => q.fail(id, t, 'x')],
    ['extend', (q, id, t) => q.extend(id, t, 1000)],
  ];

  describe.each(ops)('%s', (_name, op) => {
    it('refuses a wrong token and changes nothing', () => {
      const { queue, id, lease } = running();
      for (const token of [lease.token + 1, lease.token - 1, 0, -1, 987_654_321, Number.MAX_SAFE_INTEGER]) {
        if (token === lease.token) continue;
        expectNoChange(queue, [id], () => op(queue, id, token), StaleLeaseError, 'ERR_STALE_LEASE');
      }
      queue.complete(id, lease.token); // still the valid lease
    });

    it('refuses the token of an earlier lease after the job was leased again (zombie)', () => {
      const { queue, clock, id, lease } = running();
      clock.advance(1000 + 100); // expires, waits out backoff
      const second = mustPoll(queue, id, 1000);
      expectNoChange(queue, [id], () => op(queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
      expect(queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 2, leaseUntil: second.leaseUntil });
      queue.complete(id, second.token);
      expect(queue.view(id).status).toBe('SUCCEEDED');
    });

    it('refuses the right token after the lease expired', () => {
      const { queue, clock, id, lease } = running();
      clock.advance(1000);
      expectStale(() => op(queue, id, lease.token));
      expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired' });
    });

    it('refuses any token on a PENDING job that was never polled', () => {
      const { queue } = setup();
      const id = queue.submit('t', '');
      expectNoChange(queue, [id], () => op(queue, id, 1), StaleLeaseError, 'ERR_STALE_LEASE');
      expectNoChange(queue, [id], () => op(queue, id, 0), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it('refuses the last token on a SUCCEEDED job', () => {
      const { queue, id, lease } = running();
      queue.complete(id, lease.token);
      expectNoChange(queue, [id], () => op(queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it('refuses the last token on a job sent back to PENDING by fail', () => {
      const { queue, id, lease } = running();
      queue.fail(id, lease.token, 'first');
      expectNoChange(queue, [id], () => op(queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
      expect(queue.view(id).lastError).toBe('first');
    });

    it('refuses the last token on a DEAD job', () => {
      const s = setup({ maxAttempts: 1 });
      const id = s.queue.submit('t', '');
      const lease = mustPoll(s.queue, id);
      s.queue.fail(id, lease.token, 'dead');
      expectNoChange(s.queue, [id], () => op(s.queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it('refuses any token on a CANCELLED job', () => {
      const { queue } = setup();
      const id = queue.submit('t', '');
      queue.cancel(id);
      expectNoChange(queue, [id], () => op(queue, id, 1), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it("refuses another running job's token", () => {
      const { queue } = setup();
      queue.submit('t', 'a'); // J1
      queue.submit('t', 'b'); // J2
      const a = mustPoll(queue, 'J1');
      const b = mustPoll(queue, 'J2');
      expectNoChange(queue, ['J1', 'J2'], () => op(queue, 'J1', b.token), StaleLeaseError, 'ERR_STALE_LEASE');
      queue.complete('J1', a.token);
      queue.complete('J2', b.token);
    });

    it.each([1.5, NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 53), '1', null, undefined])(
      'refuses the token %s (never a lease token) as stale, after checking the id',
      (token) => {
        const { queue, id } = running();
        expectNoChange(queue, [id], () => op(queue, id, bad(token)), StaleLeaseError, 'ERR_STALE_LEASE');
        expectNotFound(() => op(queue, 'J999', bad(token))); // unknown id is checked before state
        expect(queue.view(id).status).toBe('RUNNING');
      },
    );
  });

  it('accepts a token once: complete twice refuses the second', () => {
    const { queue, id, lease } = running();
    queue.complete(id, lease.token);
    expectStale(() => queue.complete(id, lease.token));
    expect(queue.view(id).status).toBe('SUCCEEDED');
  });

  it('accepts a token once: fail twice refuses the second and counts one attempt', () => {
    const { queue, id, lease } = running();
    queue.fail(id, lease.token, 'one');
    expectStale(() => queue.fail(id, lease.token, 'two'));
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'one' });
  });

  it('accepts a token once: complete after fail is refused', () => {
    const { queue, id, lease } = running();
    queue.fail(id, lease.token, 'one');
    expectStale(() => queue.complete(id, lease.token));
    expect(queue.view(id).status).toBe('PENDING');
  });
});

describe('extend (heartbeat)', () => {
  it('returns now + leaseMillis and shows it in view', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(400);
    expect(queue.extend(id, lease.token, 5000)).toBe(T0 + 400 + 5000);
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: T0 + 5400, attempts: 1 });
  });

  it('keeps the lease valid past the old leaseUntil, until the new one', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(900);
    const until = queue.extend(id, lease.token, 1000); // T0 + 1900
    clock.advance(100); // old leaseUntil
    expect(queue.view(id).status).toBe('RUNNING');
    clock.advance(899); // T0 + 1899
    expect(queue.view(id).status).toBe('RUNNING');
    clock.advance(1); // == new leaseUntil
    expect(clock.now()).toBe(until);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', lastError: 'lease expired', nextRunAt: until + 100 });
  });

  it('keeps the token: extend many times, then complete with the same token', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    for (let i = 0; i < 20; i++) {
      clock.advance(900);
      expect(queue.extend(id, lease.token, 1000)).toBe(clock.now() + 1000);
    }
    expect(clock.now()).toBeGreaterThan(lease.leaseUntil);
    queue.complete(id, lease.token);
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it('sets leaseUntil = now + leaseMillis even when that shortens the lease', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 10_000);
    expect(queue.extend(id, lease.token, 10)).toBe(T0 + 10);
    clock.advance(10);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', lastError: 'lease expired', nextRunAt: T0 + 10 + 100 });
  });

  it('does not add an attempt', () => {
    const { queue } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    queue.extend(id, lease.token, 1000);
    queue.extend(id, lease.token, 1000);
    expect(queue.view(id).attempts).toBe(1);
  });

  it.each([0, -1, -0.5, NaN, Infinity, -Infinity])('rejects leaseMillis %s with InvalidArgumentError and keeps the lease', (ms) => {
    const { queue } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    const error = expectInvalid(() => queue.extend(id, lease.token, ms));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: T0 + 1000 });
    queue.complete(id, lease.token);
  });

  it('cannot revive an expired lease', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(1000);
    expectStale(() => queue.extend(id, lease.token, 60_000));
    expect(queue.view(id).status).toBe('PENDING');
  });

  it('only moves the lease of its own job', () => {
    const { queue, clock } = setup();
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    const a = mustPoll(queue, 'J1', 1000);
    mustPoll(queue, 'J2', 1000);
    queue.extend('J1', a.token, 5000);
    clock.advance(1000);
    expect(queue.view('J1').status).toBe('RUNNING');
    expect(queue.view('J2')).toMatchObject({ status: 'PENDING', lastError: 'lease expired' });
  });
});
