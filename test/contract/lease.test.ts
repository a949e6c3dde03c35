import { describe, expect, it } from 'vitest';
import { IllegalStateError, InvalidArgumentError, JobQueueError, StaleLeaseError } from '../../dist/index.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
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
  type Setup,
} from '../support/helpers.js';

describeEachBackend('poll', (backend) => {
  it('records the worker of the latest lease in the view, null before the first', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'x');
    expect((await queue.view(id)).workerId).toBeNull();
    await mustPoll(queue, id, 100, 'ada');
    expect((await queue.view(id)).workerId).toBe('ada');
    clock.advance(100 + 100); // the lease expires, the backoff passes
    await mustPoll(queue, id, 100, 'grace');
    expect(await queue.view(id)).toMatchObject({ workerId: 'grace', attempts: 2 });
  });

  it('makes the job RUNNING, adds an attempt and leases it until now + leaseMillis', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('email', 'body', 0, T0 - 50);
    clock.advance(25);
    const lease = await mustPoll(queue, id, 1500);
    expect(lease).toMatchObject({ jobId: id, type: 'email', payload: 'body', attempt: 1, leaseUntil: T0 + 25 + 1500 });
    expect(Number.isSafeInteger(lease.token)).toBe(true);
    const view = await queue.view(id);
    expect(view.status).toBe('RUNNING');
    expect(view.attempts).toBe(1);
    expect(view.leaseUntil).toBe(T0 + 1525);
    expect(view.nextRunAt).toBe(T0 - 50); // poll leaves runAt as it is
  });

  it('counts the attempt in the lease on every retry', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 4 });
    const id = await queue.submit('t', '');
    for (let attempt = 1; attempt <= 4; attempt++) {
      clock.advance(20_000);
      const lease = await mustPoll(queue, id);
      expect(lease.attempt).toBe(attempt);
      expect((await queue.view(id)).attempts).toBe(attempt);
      await queue.fail(id, lease.token, `e${attempt}`);
    }
    expect((await queue.view(id)).status).toBe('DEAD');
  });

  it('returns undefined when the queue is empty', async () => {
    const { queue } = await setup(backend);
    expect(await queue.poll('w', 1000)).toBeUndefined();
  });

  it('returns undefined when every job is running, finished or delayed', async () => {
    const { queue } = await setup(backend, { maxAttempts: 1 });
    await queue.submit('t', 'running'); // J1
    await queue.submit('t', 'done'); // J2
    await queue.submit('t', 'cancelled'); // J3
    await queue.submit('t', 'dead'); // J4
    await queue.submit('t', 'delayed', 0, T0 + 10); // J5
    await mustPoll(queue, 'J1', 100_000);
    const l2 = await mustPoll(queue, 'J2');
    await queue.complete('J2', l2.token);
    await queue.cancel('J3');
    const l4 = await mustPoll(queue, 'J4');
    await queue.fail('J4', l4.token, 'x');
    expect(await queue.poll('w', 1000)).toBeUndefined();
  });

  it('never hands a running job to a second worker', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', '');
    await mustPoll(queue, 'J1', 1000, 'w1');
    expect(await queue.poll('w2', 1000)).toBeUndefined();
  });

  it.each(['', ' ', '\t', '\n  '])('rejects the blank worker id %j with InvalidArgumentError, claiming nothing', async (worker) => {
    const { queue } = await setup(backend);
    await queue.submit('t', '');
    await expectInvalid(() => queue.poll(worker, 1000));
    expect(await queue.view('J1')).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it.each([42, null, undefined, {}])('rejects the non-string worker id %s', async (worker) => {
    const { queue } = await setup(backend);
    await queue.submit('t', '');
    await expectInvalid(() => queue.poll(bad(worker), 1000));
    expect((await queue.view('J1')).status).toBe('PENDING');
  });

  it.each(['', ' ', 42, null, undefined])('rejects the worker id %j after polls with a good one, claiming nothing', async (worker) => {
    const { queue } = await setup(backend);
    await queue.submit('t', 'a');
    await queue.submit('t', 'b');
    await mustPoll(queue, 'J1', 1000, 'w1');
    await expectInvalid(() => queue.poll(bad(worker), 1000));
    await expectInvalid(() => queue.completeAndPoll('J1', 1, bad(worker), 1000));
    expect(await queue.view('J2')).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  // Past 2^53 - 1 (1e308): a leaseUntil made from it could overflow to Infinity, which a journal would refuse to open.
  it.each([0, -1, -0.5, NaN, Infinity, -Infinity, 2 ** 53, 1e308])('rejects leaseMillis %s with InvalidArgumentError, claiming nothing', async (ms) => {
    const { queue } = await setup(backend);
    await queue.submit('t', '');
    await expectInvalid(() => queue.poll('w', ms));
    expect(await queue.view('J1')).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it.each(['1000', null, undefined])('rejects the non-number leaseMillis %j', async (ms) => {
    const { queue } = await setup(backend);
    await queue.submit('t', '');
    await expectInvalid(() => queue.poll('w', bad(ms)));
  });

  it('validates its arguments even when nothing is ready', async () => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.poll('', 1000));
    await expectInvalid(() => queue.poll('w', 0));
  });
});

describeEachBackend('tokens', (backend) => {
  it('makes a fresh token on every poll, never repeated across jobs and retries', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 5, baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const tokens: number[] = [];
    for (let i = 0; i < 40; i++) await queue.submit('t', `${i}`);
    for (let round = 0; round < 5; round++) {
      for (let lease = await queue.poll('w', 1000); lease !== undefined; lease = await queue.poll('w', 1000)) {
        tokens.push(lease.token);
        // Mix the endings: fail, complete and let expire.
        if (round < 4 && lease.attempt % 2 === 0) continue; // left to expire below
        if (round === 4 || lease.jobId.endsWith('7')) await queue.complete(lease.jobId, lease.token);
        else await queue.fail(lease.jobId, lease.token, 'again');
      }
      clock.advance(1000); // expire what was left running
    }
    expect(tokens.length).toBeGreaterThan(100);
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const t of tokens) expect(Number.isSafeInteger(t)).toBe(true);
  });

  it('gives a job a different token when it is leased again', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const first = await mustPoll(queue, id, 100);
    clock.advance(100 + 100); // expire + backoff after attempt 1
    const second = await mustPoll(queue, id, 100);
    expect(second.token).not.toBe(first.token);
  });

  it('does not repeat tokens after a retryDead', async () => {
    const s = await setup(backend, { maxAttempts: 2 });
    const id = await s.queue.submit('t', '');
    const seen = new Set<number>();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2; i++) {
        s.clock.advance(20_000);
        const lease = await mustPoll(s.queue, id);
        expect(seen.has(lease.token)).toBe(false);
        seen.add(lease.token);
        await s.queue.fail(id, lease.token, 'x');
      }
      expect((await s.queue.view(id)).status).toBe('DEAD');
      await s.queue.retryDead(id);
    }
    expect(seen.size).toBe(6);
  });
});

describeEachBackend('lease expiry', (backend) => {
  it('keeps the lease valid while now < leaseUntil', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(999);
    expect((await queue.view(id)).status).toBe('RUNNING');
    await queue.complete(id, lease.token);
    expect((await queue.view(id)).status).toBe('SUCCEEDED');
  });

  it('expires the lease when now == leaseUntil', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(1000);
    expect(clock.now()).toBe(lease.leaseUntil);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired', leaseUntil: null });
    await expectStale(() => queue.complete(id, lease.token));
  });

  it('counts an expired lease as a failed attempt at leaseUntil, not at now', async () => {
    const { queue, clock, policy } = await setup(backend); // backoff 100, 200, 400 ...
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(50_000); // well past leaseUntil and past the backoff
    const view = await queue.view(id);
    expect(view.status).toBe('PENDING');
    expect(view.lastError).toBe('lease expired');
    expect(view.attempts).toBe(1);
    expect(view.nextRunAt).toBe(lease.leaseUntil + policy.backoffAfter(1));
    expect(view.nextRunAt).toBe(T0 + 1000 + 100);
  });

  it('uses the backoff of the attempt that expired', async () => {
    const { queue, clock, policy } = await setup(backend, { maxAttempts: 4 });
    const id = await queue.submit('t', '');
    await mustPoll(queue, id, 1000);
    clock.advance(60_000);
    const second = await mustPoll(queue, id, 700);
    expect(second.attempt).toBe(2);
    clock.advance(60_000);
    expect((await queue.view(id)).nextRunAt).toBe(second.leaseUntil + policy.backoffAfter(2));
    expect((await queue.view(id)).nextRunAt).toBe(second.leaseUntil + 200);
  });

  it('makes the job DEAD when the last attempt expires', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', '');
    await mustPoll(queue, id, 1000);
    clock.advance(1000);
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: 'lease expired' });
    expect(await queue.dlqDepth()).toBe(1);
    expect((await queue.deadLetters()).map((v) => v.id)).toEqual([id]);
  });

  it('processes several expiries, each at its own leaseUntil', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 3 });
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    const a = await mustPoll(queue, 'J1', 300);
    const b = await mustPoll(queue, 'J2', 7000);
    clock.advance(100_000);
    expect((await queue.view('J1')).nextRunAt).toBe(a.leaseUntil + 100);
    expect((await queue.view('J2')).nextRunAt).toBe(b.leaseUntil + 100);
  });

  it('lets an expired job be polled again once its backoff is over', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const first = await mustPoll(queue, id, 1000);
    clock.advance(1000); // expired at T0+1000, runAt T0+1100
    expect(await queue.poll('w', 1000)).toBeUndefined();
    clock.advance(99);
    expect(await queue.poll('w', 1000)).toBeUndefined();
    clock.advance(1);
    const second = await mustPoll(queue, id, 1000);
    expect(second.attempt).toBe(2);
    expect(second.token).not.toBe(first.token);
  });

  it('hands an expired job out again at once when the backoff is 0', async () => {
    const { queue, clock } = await setup(backend, { baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = await queue.submit('t', '');
    const first = await mustPoll(queue, id, 1000);
    clock.advance(1000);
    const second = await mustPoll(queue, id, 1000);
    expect(second.attempt).toBe(2);
    expect(second.token).not.toBe(first.token);
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', nextRunAt: T0 + 1000, lastError: 'lease expired' });
  });

  const reads: Array<[string, (s: Setup, id: string) => Promise<unknown>]> = [
    ['view', async (s, id) => expect(await s.queue.view(id)).toMatchObject({ status: 'PENDING', lastError: 'lease expired', leaseUntil: null })],
    ['stats', async (s) => expect(await s.queue.stats()).toMatchObject({ running: 0, pending: 1 })],
    ['queueDepth', async (s) => expect(await s.queue.queueDepth()).toBe(1)],
    ['poll', async (s, id) => expect((await mustPoll(s.queue, id)).attempt).toBe(2)],
  ];
  it.each(reads)('has processed the expiry before %s, as the first call after the clock moved', async (_name, check) => {
    const s = await setup(backend);
    const id = await s.queue.submit('t', '');
    await mustPoll(s.queue, id, 1000);
    s.clock.advance(5000);
    await check(s, id);
  });

  const deadReads: Array<[string, (s: Setup, id: string) => Promise<unknown>]> = [
    ['dlqDepth', async (s) => expect(await s.queue.dlqDepth()).toBe(1)],
    ['deadLetters', async (s, id) => expect((await s.queue.deadLetters()).map((v) => v.id)).toEqual([id])],
    ['stats', async (s) => expect(await s.queue.stats()).toMatchObject({ running: 0, dead: 1 })],
    ['retryDead', async (s, id) => s.queue.retryDead(id)],
    ['cancel (refused: the job is DEAD)', (s, id) => expectError(() => s.queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE')],
  ];
  it.each(deadReads)('has processed a dead-lettering expiry before %s', async (_name, check) => {
    const s = await setup(backend, { maxAttempts: 1 });
    const id = await s.queue.submit('t', '');
    await mustPoll(s.queue, id, 1000);
    s.clock.advance(1000);
    await check(s, id);
  });

  it('has processed the expiry before cancel (the job is PENDING again, so cancel works)', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    await mustPoll(queue, id, 1000);
    clock.advance(1000);
    await queue.cancel(id);
    expect((await queue.view(id)).status).toBe('CANCELLED');
  });

  it('does not let a late fail overwrite the expiry or count a second attempt', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(1500);
    await expectStale(() => queue.fail(id, lease.token, 'late'));
    expect(await queue.view(id)).toMatchObject({ attempts: 1, lastError: 'lease expired', nextRunAt: T0 + 1100 });
  });
});

describeEachBackend('stale leases', (backend) => {
  async function running() {
    const s = await setup(backend);
    const id = await s.queue.submit('t', '');
    const lease = await mustPoll(s.queue, id, 1000);
    return { ...s, id, lease };
  }

  it('is a StaleLeaseError that is also an IllegalStateError with code ERR_STALE_LEASE', async () => {
    const { queue, id, lease } = await running();
    const error = await expectStale(() => queue.complete(id, lease.token + 1));
    expect(error).toBeInstanceOf(IllegalStateError);
    expect(error).toBeInstanceOf(JobQueueError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('StaleLeaseError');
  });

  const ops: Array<[string, (q: ContractQueue, id: string, token: number) => unknown]> = [
    ['complete', (q, id, t) => q.complete(id, t)],
    ['completeAndPoll', (q, id, t) => q.completeAndPoll(id, t, 'w2', 1000)],
    ['fail', (q, id, t) => q.fail(id, t, 'x')],
    ['extend', (q, id, t) => q.extend(id, t, 1000)],
  ];

  describe.each(ops)('%s', (_name, op) => {
    it('refuses a wrong token and changes nothing', async () => {
      const { queue, id, lease } = await running();
      for (const token of [lease.token + 1, lease.token - 1, 0, -1, 987_654_321, Number.MAX_SAFE_INTEGER]) {
        if (token === lease.token) continue;
        await expectNoChange(queue, [id], () => op(queue, id, token), StaleLeaseError, 'ERR_STALE_LEASE');
      }
      await queue.complete(id, lease.token); // still the valid lease
    });

    it('refuses the token of an earlier lease after the job was leased again (zombie)', async () => {
      const { queue, clock, id, lease } = await running();
      clock.advance(1000 + 100); // expires, waits out backoff
      const second = await mustPoll(queue, id, 1000);
      await expectNoChange(queue, [id], () => op(queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
      expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 2, leaseUntil: second.leaseUntil });
      await queue.complete(id, second.token);
      expect((await queue.view(id)).status).toBe('SUCCEEDED');
    });

    it('refuses the right token after the lease expired', async () => {
      const { queue, clock, id, lease } = await running();
      clock.advance(1000);
      await expectStale(() => op(queue, id, lease.token));
      expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired' });
    });

    it('refuses any token on a PENDING job that was never polled', async () => {
      const { queue } = await setup(backend);
      const id = await queue.submit('t', '');
      await expectNoChange(queue, [id], () => op(queue, id, 1), StaleLeaseError, 'ERR_STALE_LEASE');
      await expectNoChange(queue, [id], () => op(queue, id, 0), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it('refuses the last token on a SUCCEEDED job', async () => {
      const { queue, id, lease } = await running();
      await queue.complete(id, lease.token);
      await expectNoChange(queue, [id], () => op(queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it('refuses the last token on a job sent back to PENDING by fail', async () => {
      const { queue, id, lease } = await running();
      await queue.fail(id, lease.token, 'first');
      await expectNoChange(queue, [id], () => op(queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
      expect((await queue.view(id)).lastError).toBe('first');
    });

    it('refuses the last token on a DEAD job', async () => {
      const s = await setup(backend, { maxAttempts: 1 });
      const id = await s.queue.submit('t', '');
      const lease = await mustPoll(s.queue, id);
      await s.queue.fail(id, lease.token, 'dead');
      await expectNoChange(s.queue, [id], () => op(s.queue, id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it('refuses any token on a CANCELLED job', async () => {
      const { queue } = await setup(backend);
      const id = await queue.submit('t', '');
      await queue.cancel(id);
      await expectNoChange(queue, [id], () => op(queue, id, 1), StaleLeaseError, 'ERR_STALE_LEASE');
    });

    it("refuses another running job's token", async () => {
      const { queue } = await setup(backend);
      await queue.submit('t', 'a'); // J1
      await queue.submit('t', 'b'); // J2
      const a = await mustPoll(queue, 'J1');
      const b = await mustPoll(queue, 'J2');
      await expectNoChange(queue, ['J1', 'J2'], () => op(queue, 'J1', b.token), StaleLeaseError, 'ERR_STALE_LEASE');
      await queue.complete('J1', a.token);
      await queue.complete('J2', b.token);
    });

    it.each([1.5, NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 53), '1', null, undefined])(
      'refuses the token %s (never a lease token) as stale, after checking the id',
      async (token) => {
        const { queue, id } = await running();
        await expectNoChange(queue, [id], () => op(queue, id, bad(token)), StaleLeaseError, 'ERR_STALE_LEASE');
        await expectNotFound(() => op(queue, 'J999', bad(token))); // unknown id is checked before state
        expect((await queue.view(id)).status).toBe('RUNNING');
      },
    );
  });

  it('accepts a token once: complete twice refuses the second', async () => {
    const { queue, id, lease } = await running();
    await queue.complete(id, lease.token);
    await expectStale(() => queue.complete(id, lease.token));
    expect((await queue.view(id)).status).toBe('SUCCEEDED');
  });

  it('accepts a token once: fail twice refuses the second and counts one attempt', async () => {
    const { queue, id, lease } = await running();
    await queue.fail(id, lease.token, 'one');
    await expectStale(() => queue.fail(id, lease.token, 'two'));
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'one' });
  });

  it('accepts a token once: complete after fail is refused', async () => {
    const { queue, id, lease } = await running();
    await queue.fail(id, lease.token, 'one');
    await expectStale(() => queue.complete(id, lease.token));
    expect((await queue.view(id)).status).toBe('PENDING');
  });
});

describeEachBackend('extend (heartbeat)', (backend) => {
  it('returns now + leaseMillis and shows it in view', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(400);
    expect(await queue.extend(id, lease.token, 5000)).toBe(T0 + 400 + 5000);
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: T0 + 5400, attempts: 1 });
  });

  it('keeps the lease valid past the old leaseUntil, until the new one', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(900);
    const until = await queue.extend(id, lease.token, 1000); // T0 + 1900
    clock.advance(100); // old leaseUntil
    expect((await queue.view(id)).status).toBe('RUNNING');
    clock.advance(899); // T0 + 1899
    expect((await queue.view(id)).status).toBe('RUNNING');
    clock.advance(1); // == new leaseUntil
    expect(clock.now()).toBe(until);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', lastError: 'lease expired', nextRunAt: until + 100 });
  });

  it('keeps the token: extend many times, then complete with the same token', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    for (let i = 0; i < 20; i++) {
      clock.advance(900);
      expect(await queue.extend(id, lease.token, 1000)).toBe(clock.now() + 1000);
    }
    expect(clock.now()).toBeGreaterThan(lease.leaseUntil);
    await queue.complete(id, lease.token);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it('sets leaseUntil = now + leaseMillis even when that shortens the lease', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 10_000);
    expect(await queue.extend(id, lease.token, 10)).toBe(T0 + 10);
    clock.advance(10);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', lastError: 'lease expired', nextRunAt: T0 + 10 + 100 });
  });

  it('extends to an end below zero on a clock that reads below zero: the end is returned, not taken for a refusal', async () => {
    const { queue, clock } = await setup(backend, { start: -5000 });
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    expect(lease.leaseUntil).toBe(-4000);
    for (const end of [-4990, -4999, -4101]) {
      expect(await queue.extend(id, lease.token, end + 5000)).toBe(end);
      expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: end, attempts: 1 });
    }
    clock.advance(800); // -4200: before the last end
    await queue.complete(id, lease.token);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it('does not add an attempt', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    await queue.extend(id, lease.token, 1000);
    await queue.extend(id, lease.token, 1000);
    expect((await queue.view(id)).attempts).toBe(1);
  });

  it.each([0, -1, -0.5, NaN, Infinity, -Infinity, 2 ** 53, 1e308])('rejects leaseMillis %s with InvalidArgumentError and keeps the lease', async (ms) => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    const error = await expectInvalid(() => queue.extend(id, lease.token, ms));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: T0 + 1000 });
    await queue.complete(id, lease.token);
  });

  it('cannot revive an expired lease', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(1000);
    await expectStale(() => queue.extend(id, lease.token, 60_000));
    expect((await queue.view(id)).status).toBe('PENDING');
  });

  it('only moves the lease of its own job', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    const a = await mustPoll(queue, 'J1', 1000);
    await mustPoll(queue, 'J2', 1000);
    await queue.extend('J1', a.token, 5000);
    clock.advance(1000);
    expect((await queue.view('J1')).status).toBe('RUNNING');
    expect(await queue.view('J2')).toMatchObject({ status: 'PENDING', lastError: 'lease expired' });
  });
});

describeEachBackend('completeAndPoll (a worker loop\'s step)', (backend) => {
  it('completes the job, then leases the best ready job to the worker, as complete and poll would', async () => {
    const { queue, clock } = await setup(backend);
    const first = await queue.submit('t', 'one', 5);
    const low = await queue.submit('t', 'low', 1);
    const high = await queue.submit('t', 'high', 3);
    const lease = await mustPoll(queue, first);
    clock.advance(10);
    const next = await queue.completeAndPoll(first, lease.token, 'w2', 500);
    expect(await queue.view(first)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(next).toMatchObject({ jobId: high, payload: 'high', attempt: 1, leaseUntil: T0 + 10 + 500 });
    expect(next!.token).toBeGreaterThan(lease.token);
    expect(await queue.view(high)).toMatchObject({ status: 'RUNNING', workerId: 'w2' });
    const last = await queue.completeAndPoll(high, next!.token, 'w2', 500);
    expect(last?.jobId).toBe(low);
    expect(await queue.completeAndPoll(low, last!.token, 'w2', 500)).toBeUndefined();
    expect(await queue.stats()).toMatchObject({ succeeded: 3, pending: 0, running: 0 });
  });

  it('polls nothing when the complete is refused: a zombie\'s step changes nothing', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '', 1); // first in line whenever it is ready
    const other = await queue.submit('t', '');
    const old = await mustPoll(queue, id, 100);
    clock.advance(100 + 100); // expired, backoff over: leased again
    const current = await mustPoll(queue, id, 1000);
    await expectNoChange(queue, [id, other], () => queue.completeAndPoll(id, old.token, 'zombie', 1000), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNotFound(() => queue.completeAndPoll('J99', current.token, 'w', 1000));
    expect(await queue.view(other)).toMatchObject({ status: 'PENDING' });
  });

  it('checks its arguments before anything: a blank worker id or a bad lease refuses even a valid complete', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', '');
    const lease = await mustPoll(queue, id);
    await expectNoChange(queue, [id], () => queue.completeAndPoll(id, lease.token, ' ', 1000), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectNoChange(queue, [id], () => queue.completeAndPoll(id, lease.token, 'w', 0), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectInvalid(() => queue.completeAndPoll(id, lease.token, bad(undefined), 1000));
    expect(await queue.completeAndPoll(id, lease.token, 'w', 1000)).toBeUndefined();
  });
});
