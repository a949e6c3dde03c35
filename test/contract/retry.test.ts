import { describe, expect, it } from 'vitest';
import { IllegalStateError, InvalidArgumentError, ManualClock, RetryPolicy } from '../../dist/index.js';
import { describeEachBackend, openQueue } from '../support/backends.js';
import {
  T0,
  bad,
  expectIllegalState,
  expectInvalid,
  expectInvalidSync,
  expectNoChange,
  killJob,
  mustPoll,
  setup,
  utf8Bytes,
} from '../support/helpers.js';

describe('RetryPolicy validation', () => {
  it('keeps its settings', () => {
    const p = new RetryPolicy(5, 250, 60_000);
    expect(p.maxAttempts).toBe(5);
    expect(p.baseBackoffMillis).toBe(250);
    expect(p.maxBackoffMillis).toBe(60_000);
  });

  it('accepts the smallest settings: 1 attempt, no backoff', () => {
    const p = new RetryPolicy(1, 0, 0);
    expect(p.backoffAfter(1)).toBe(0);
  });

  it('accepts max == base and every jitter name', () => {
    expect(new RetryPolicy(3, 100, 100).backoffAfter(3)).toBe(100);
    for (const jitter of ['none', 'full', 'equal'] as const) {
      expect(() => new RetryPolicy(3, 100, 1000, { jitter })).not.toThrow();
    }
    expect(() => new RetryPolicy(3, 100, 1000, {})).not.toThrow();
  });

  it.each([0, -1, 1.5, NaN, Infinity, -Infinity, '3', null])('rejects maxAttempts %s', (n) => {
    expectInvalidSync(() => new RetryPolicy(bad(n), 100, 1000));
  });

  it.each([-1, 1.5, NaN, Infinity, -Infinity, '100', null, 2 ** 53])('rejects baseBackoffMillis %s', (base) => {
    expectInvalidSync(() => new RetryPolicy(3, bad(base), 1000));
  });

  it.each([-1, 1.5, NaN, Infinity, -Infinity, '1000', null, 2 ** 53])('rejects maxBackoffMillis %s', (max) => {
    expectInvalidSync(() => new RetryPolicy(3, 0, bad(max)));
  });

  it('rejects max < base', () => {
    expectInvalidSync(() => new RetryPolicy(3, 100, 99));
    expectInvalidSync(() => new RetryPolicy(3, 1, 0));
  });

  it.each(['bogus', '', 'NONE', 'Full', 42, true, null])('rejects the jitter %j', (jitter) => {
    expectInvalidSync(() => new RetryPolicy(3, 100, 1000, { jitter: bad(jitter) }));
  });

  it.each([
    ['a misspelt option', { jiter: 'full' }, 'no keys but jitter, got `jiter`'],
    ['an array', [], 'got an array'],
    ['a string', 'full', 'to be an object'],
  ])('rejects %s as its options', (_name, options, message) => {
    expect(expectInvalidSync(() => new RetryPolicy(3, 100, 1000, bad(options))).message).toContain(message);
  });
});

describe('backoffAfter', () => {
  it('is min(max, base * 2^(n-1))', () => {
    const p = new RetryPolicy(10, 100, 10_000);
    const table = [
      [1, 100],
      [2, 200],
      [3, 400],
      [4, 800],
      [5, 1600],
      [6, 3200],
      [7, 6400],
      [8, 10_000],
      [9, 10_000],
      [50, 10_000],
    ];
    expect(table.map(([n]) => [n, p.backoffAfter(n!)])).toEqual(table);
  });

  it('follows the 1 s, 2 s, 4 s schedule with base 1000', () => {
    const p = new RetryPolicy(5, 1000, 1_000_000);
    expect([1, 2, 3, 4, 5].map((n) => p.backoffAfter(n))).toEqual([1000, 2000, 4000, 8000, 16_000]);
  });

  it('is the cap exactly when base * 2^(n-1) hits it', () => {
    const p = new RetryPolicy(5, 100, 800);
    expect(p.backoffAfter(4)).toBe(800);
    expect(p.backoffAfter(5)).toBe(800);
  });

  it.each([31, 32, 33, 53, 64, 65, 1023, 1024, 1025, 2000, 1e6, Number.MAX_SAFE_INTEGER])(
    'stays finite and equal to max for huge n = %s',
    (n) => {
      const p = new RetryPolicy(3, 1000, 3_600_000);
      const d = p.backoffAfter(n);
      expect(Number.isFinite(d)).toBe(true);
      expect(d).toBe(3_600_000);
    },
  );

  it('does not overflow with a large base and cap', () => {
    const p = new RetryPolicy(3, 2 ** 40, Number.MAX_SAFE_INTEGER);
    expect(p.backoffAfter(1)).toBe(2 ** 40);
    expect(p.backoffAfter(2)).toBe(2 ** 41);
    expect(p.backoffAfter(30)).toBe(Number.MAX_SAFE_INTEGER);
    expect(p.backoffAfter(1e6)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each([1, 2, 10, 2000, 1e6])('is 0 with base 0 (n = %s)', (n) => {
    expect(new RetryPolicy(3, 0, 5000).backoffAfter(n)).toBe(0);
  });

  it.each([0, -1, 1.5, NaN, Infinity, '1', null])('rejects n = %s', (n) => {
    expectInvalidSync(() => new RetryPolicy(3, 100, 1000).backoffAfter(bad(n)));
  });

  it('is deterministic with the default jitter', () => {
    const p = new RetryPolicy(3, 100, 10_000);
    const samples = new Set(Array.from({ length: 100 }, () => p.backoffAfter(3)));
    expect([...samples]).toEqual([400]);
  });
});

describe('jitter', () => {
  const SAMPLES = 2000;

  it.each([1, 3, 5, 10])("'full' draws in [0, d] and varies (n = %s)", (n) => {
    const d = new RetryPolicy(3, 100, 10_000).backoffAfter(n);
    const p = new RetryPolicy(3, 100, 10_000, { jitter: 'full' });
    const xs = Array.from({ length: SAMPLES }, () => p.backoffAfter(n));
    for (const x of xs) {
      expect(Number.isFinite(x)).toBe(true);
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThanOrEqual(d);
    }
    expect(new Set(xs).size).toBeGreaterThan(1);
    // Spread over the range: some draws in the lower and some in the upper half.
    expect(xs.some((x) => x < d / 2)).toBe(true);
    expect(xs.some((x) => x > d / 2)).toBe(true);
  });

  it.each([1, 3, 5, 10])("'equal' draws in [d/2, d] and varies (n = %s)", (n) => {
    const d = new RetryPolicy(3, 100, 10_000).backoffAfter(n);
    const p = new RetryPolicy(3, 100, 10_000, { jitter: 'equal' });
    const xs = Array.from({ length: SAMPLES }, () => p.backoffAfter(n));
    for (const x of xs) {
      expect(Number.isFinite(x)).toBe(true);
      expect(x).toBeGreaterThanOrEqual(d / 2);
      expect(x).toBeLessThanOrEqual(d);
    }
    expect(new Set(xs).size).toBeGreaterThan(1);
  });

  it.each(['full', 'equal'] as const)("'%s' stays finite and within the cap for huge n", (jitter) => {
    const p = new RetryPolicy(3, 1000, 60_000, { jitter });
    for (const n of [2000, 1e6]) {
      for (let i = 0; i < 200; i++) {
        const x = p.backoffAfter(n);
        expect(Number.isFinite(x)).toBe(true);
        expect(x).toBeGreaterThanOrEqual(jitter === 'equal' ? 30_000 : 0);
        expect(x).toBeLessThanOrEqual(60_000);
      }
    }
  });

  it.each(['full', 'equal'] as const)("'%s' with base 0 is always 0", (jitter) => {
    const p = new RetryPolicy(3, 0, 0, { jitter });
    for (let i = 0; i < 100; i++) expect(p.backoffAfter(1 + (i % 7))).toBe(0);
  });
});

describeEachBackend('jitter', (backend) => {
  it('applies the jitter to the runAt the queue sets after a failure', async () => {
    const clock = new ManualClock(T0);
    const queue = await openQueue(backend, clock, new RetryPolicy(5, 1000, 1000, { jitter: 'equal' }));
    const waits: number[] = [];
    for (let i = 0; i < 200; i++) {
      const id = await queue.submit('t', '');
      await queue.fail(id, (await mustPoll(queue, id)).token, 'x');
      waits.push((await queue.view(id)).nextRunAt - clock.now());
      await queue.cancel(id);
    }
    for (const w of waits) {
      expect(w).toBeGreaterThanOrEqual(500);
      expect(w).toBeLessThanOrEqual(1000);
    }
    expect(new Set(waits).size).toBeGreaterThan(1);
  });
});

describeEachBackend('fail: retry or dead-letter', (backend) => {
  it('sends the job back to PENDING with runAt = now + backoffAfter(attempts)', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 3 }); // 100, 200, ...
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id, 10_000);
    clock.advance(30); // fail some time after the poll
    await queue.fail(id, lease.token, 'oops');
    expect(await queue.view(id)).toMatchObject({
      status: 'PENDING',
      attempts: 1,
      lastError: 'oops',
      nextRunAt: T0 + 30 + 100,
      leaseUntil: null,
    });
  });

  it('waits the backoff before handing the job out again', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, 'x'); // runAt T0 + 100
    clock.advance(99);
    expect(await queue.poll('w', 1000)).toBeUndefined();
    clock.advance(1);
    expect((await mustPoll(queue, id)).attempt).toBe(2);
  });

  it('doubles the wait after each failed attempt, up to the cap', async () => {
    const { queue, clock, policy } = await setup(backend, { maxAttempts: 10, baseBackoffMillis: 100, maxBackoffMillis: 1000 });
    const id = await queue.submit('t', 'p');
    const waits: number[] = [];
    for (let n = 1; n < 10; n++) {
      const lease = await mustPoll(queue, id);
      await queue.fail(id, lease.token, `e${n}`);
      const view = await queue.view(id);
      waits.push(view.nextRunAt - clock.now());
      expect(view.nextRunAt - clock.now()).toBe(policy.backoffAfter(n));
      clock.set(view.nextRunAt);
    }
    expect(waits).toEqual([100, 200, 400, 800, 1000, 1000, 1000, 1000, 1000]);
  });

  it.each([1, 2, 3, 5])('dead-letters after exactly maxAttempts = %s attempts, never before', async (maxAttempts) => {
    const { queue, clock } = await setup(backend, { maxAttempts });
    const id = await queue.submit('t', 'p');
    for (let n = 1; n <= maxAttempts; n++) {
      expect((await queue.view(id)).status).toBe('PENDING');
      clock.advance(20_000);
      const lease = await mustPoll(queue, id);
      expect(lease.attempt).toBe(n);
      await queue.fail(id, lease.token, `e${n}`);
    }
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: maxAttempts, lastError: `e${maxAttempts}`, leaseUntil: null });
  });

  it('never hands a DEAD job out again (no attempt past maxAttempts)', async () => {
    const s = await setup(backend, { maxAttempts: 2 });
    const id = await s.queue.submit('t', 'p');
    await killJob(s, id);
    s.clock.advance(10_000_000);
    expect(await s.queue.poll('w', 1000)).toBeUndefined();
    expect((await s.queue.view(id)).attempts).toBe(2);
  });

  it('counts expired leases and fails alike toward maxAttempts', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 3 });
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id, 1000)).token, 'by fail'); // attempt 1
    clock.advance(20_000);
    await mustPoll(queue, id, 1000); // attempt 2: expires
    clock.advance(20_000);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 2, lastError: 'lease expired' });
    await queue.fail(id, (await mustPoll(queue, id, 1000)).token, 'third'); // attempt 3
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 3, lastError: 'third' });
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
  ])("records a %s error as 'failed'", async (_name, error) => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, error);
    expect((await queue.view(id)).lastError).toBe('failed');
  });

  it("records an omitted error as 'failed'", async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token);
    expect((await queue.view(id)).lastError).toBe('failed');
  });

  it('records the error exactly, and each failure replaces the last', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 5 });
    const id = await queue.submit('t', 'p');
    for (const error of ['first', 'Fehler: ü 😀 错误\u0000end', '  spaced  ']) {
      clock.advance(20_000);
      await queue.fail(id, (await mustPoll(queue, id)).token, error);
      expect((await queue.view(id)).lastError).toBe(error);
    }
  });

  it("records an empty error as '' (a string, not null and not 'failed')", async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, '');
    expect((await queue.view(id)).lastError).toBe('');
  });

  it('records errors of every length from 1 to 300 bytes exactly', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1000, baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = await queue.submit('t', 'p');
    for (let bytes = 1; bytes <= 300; bytes++) {
      const errors = ['é'.repeat(bytes >> 1) + 'x'.repeat(bytes & 1), 'Err'.repeat(bytes).slice(0, bytes)];
      for (const error of errors) {
        expect(utf8Bytes(error)).toBe(bytes);
        await queue.fail(id, (await mustPoll(queue, id)).token, error);
        expect((await queue.view(id)).lastError).toBe(error);
        clock.advance(1);
      }
    }
  });

  it('cuts an error longer than maxErrorBytes to a well-formed prefix that fits', async () => {
    const { queue } = await setup(backend, { options: { maxErrorBytes: 100 } });
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    const ascii = 'x'.repeat(500);
    await queue.fail('J1', (await mustPoll(queue, 'J1')).token, ascii);
    const cut = (await queue.view('J1')).lastError!;
    expect(utf8Bytes(cut)).toBeLessThanOrEqual(100);
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.startsWith('x'.repeat(50))).toBe(true);

    const wide = '€'.repeat(200); // 600 bytes; 100 is not a multiple of 3
    await queue.fail('J2', (await mustPoll(queue, 'J2')).token, wide);
    const cutWide = (await queue.view('J2')).lastError!;
    expect(utf8Bytes(cutWide)).toBeLessThanOrEqual(100);
    expect(cutWide.isWellFormed()).toBe(true);
    expect(cutWide.startsWith('€'.repeat(20))).toBe(true);
  });

  it('keeps an error of up to the default 8192 bytes whole', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const error = 'e'.repeat(8192);
    await queue.fail(id, (await mustPoll(queue, id)).token, error);
    expect((await queue.view(id)).lastError).toBe(error);
  });

  it('cuts an error over the default 8192 bytes to fit', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, '😀'.repeat(5000)); // 20 000 bytes
    const cut = (await queue.view(id)).lastError!;
    expect(utf8Bytes(cut)).toBeLessThanOrEqual(8192);
    expect(cut.isWellFormed()).toBe(true);
    expect(cut.startsWith('😀'.repeat(100))).toBe(true);
  });

  it.each([
    ['a misspelt option', { permanant: true }, 'no keys but permanent, got `permanant`'],
    ['an array', [], 'got an array'],
    ['a number', 5, 'to be an object'],
    ['a string', 'x', 'to be an object'],
    ['a null permanent', { permanent: null }, '`permanent` to be a boolean'],
    ['a string permanent', { permanent: 'yes' }, '`permanent` to be a boolean'],
  ])('refuses %s as its options, before anything changes', async (_name, options, message) => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    const error = await expectNoChange(queue, [id], () => queue.fail(id, lease.token, 'e', bad(options)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    expect(error.message).toContain(message);
    // The lease still holds: the refused fail neither retried the job nor dead-lettered it.
    await queue.fail(id, lease.token, 'e', { permanent: true });
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1 });
  });

  it('takes empty options, and permanent: false, as a fail that retries', async () => {
    const { queue } = await setup(backend);
    const first = await queue.submit('t', 'p');
    const second = await queue.submit('t', 'p');
    await queue.fail(first, (await mustPoll(queue, first)).token, 'e', {});
    await queue.fail(second, (await mustPoll(queue, second)).token, 'e', { permanent: false });
    expect(await queue.view(first)).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(await queue.view(second)).toMatchObject({ status: 'PENDING', attempts: 1 });
  });

  it.each([42, {}, ['x'], true])('rejects the non-string error %s and keeps the lease', async (error) => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    await expectInvalid(() => queue.fail(id, lease.token, bad(error)));
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 1, lastError: null });
    await queue.complete(id, lease.token);
  });
});

describeEachBackend('dead letters', (backend) => {
  it('is empty at first', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', 'p');
    expect(await queue.deadLetters()).toEqual([]);
    expect(await queue.dlqDepth()).toBe(0);
  });

  it('lists every DEAD job in submission order, whatever order they died in', async () => {
    const { queue } = await setup(backend, { maxAttempts: 1 });
    for (let i = 1; i <= 5; i++) await queue.submit('t', `p${i}`);
    const leases = new Map<string, number>();
    for (let i = 1; i <= 5; i++) leases.set(`J${i}`, (await mustPoll(queue, `J${i}`)).token);
    for (const id of ['J4', 'J2', 'J5', 'J1']) {
      await queue.fail(id, leases.get(id)!, `dead ${id}`);
      expect((await queue.deadLetters()).map((v) => v.id)).toContain(id);
    }
    await queue.complete('J3', leases.get('J3')!);
    const dead = await queue.deadLetters();
    expect(dead.map((v) => v.id)).toEqual(['J1', 'J2', 'J4', 'J5']);
    for (const v of dead) {
      expect(v.status).toBe('DEAD');
      expect(v.lastError).toBe(`dead ${v.id}`);
      expect(v.attempts).toBe(1);
      expect(v.payload).toBe(`p${v.id.slice(1)}`);
    }
    expect(await queue.dlqDepth()).toBe(4);
  });

  it('lists dead jobs by submission order even when a newer job reuses an older slot', async () => {
    const s = await setup(backend, { maxAttempts: 1, options: { capacity: 3 } });
    const { queue } = s;
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    await queue.submit('t', 'c'); // J3
    await queue.complete('J1', (await mustPoll(queue, 'J1')).token);
    await queue.cancel('J2');
    await queue.fail('J3', (await mustPoll(queue, 'J3')).token, 'x');
    await queue.submit('t', 'd'); // J4 takes J1's room
    await queue.submit('t', 'e'); // J5 takes J2's room
    await queue.fail('J4', (await mustPoll(queue, 'J4')).token, 'y');
    await queue.fail('J5', (await mustPoll(queue, 'J5')).token, 'z');
    expect((await queue.deadLetters()).map((v) => v.id)).toEqual(['J3', 'J4', 'J5']);
  });

  it('includes jobs dead-lettered by lease expiry', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    await mustPoll(queue, 'J1', 500);
    const b = await mustPoll(queue, 'J2', 5000);
    await queue.fail('J2', b.token, 'explicit');
    clock.advance(500);
    expect((await queue.deadLetters()).map((v) => [v.id, v.lastError])).toEqual([
      ['J1', 'lease expired'],
      ['J2', 'explicit'],
    ]);
  });
});

describeEachBackend('retryDead', (backend) => {
  async function deadJob(maxAttempts = 2) {
    const s = await setup(backend, { maxAttempts });
    const id = await s.queue.submit('t', 'payload', 4);
    await killJob(s, id, 'poison');
    return { ...s, id };
  }

  it('moves a DEAD job back to PENDING with attempts 0, runAt = now and lastError kept', async () => {
    const { queue, clock, id } = await deadJob();
    clock.advance(12_345);
    await queue.retryDead(id);
    expect(await queue.view(id)).toMatchObject({
      id,
      status: 'PENDING',
      attempts: 0,
      nextRunAt: clock.now(),
      lastError: 'poison',
      priority: 4,
      payload: 'payload',
      leaseUntil: null,
    });
  });

  it('makes the job ready at once and gives it a full set of attempts again', async () => {
    const { queue, clock, id } = await deadJob(2);
    await queue.retryDead(id);
    const first = await mustPoll(queue, id);
    expect(first.attempt).toBe(1);
    expect(first.payload).toBe('payload');
    await queue.fail(id, first.token, 'again');
    expect((await queue.view(id)).status).toBe('PENDING');
    clock.advance(20_000);
    await queue.fail(id, (await mustPoll(queue, id)).token, 'and again');
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 2, lastError: 'and again' });
  });

  it('removes the job from the dead letters and moves it between the depths', async () => {
    const { queue, id } = await deadJob();
    expect(await queue.dlqDepth()).toBe(1);
    expect(await queue.queueDepth()).toBe(0);
    await queue.retryDead(id);
    expect(await queue.dlqDepth()).toBe(0);
    expect(await queue.queueDepth()).toBe(1);
    expect(await queue.deadLetters()).toEqual([]);
  });

  it('refuses a job that is not DEAD with IllegalStateError (ERR_ILLEGAL_STATE) and changes nothing', async () => {
    const s = await setup(backend, { maxAttempts: 1 });
    const { queue } = s;
    await queue.submit('t', 'pending'); // J1
    await queue.submit('t', 'delayed', 0, T0 + 50_000); // J2
    await queue.submit('t', 'running', 9); // J3
    await queue.submit('t', 'succeeded', 8); // J4
    await queue.submit('t', 'cancelled'); // J5
    const running = await mustPoll(queue, 'J3', 1_000_000);
    await queue.complete('J4', (await mustPoll(queue, 'J4')).token);
    await queue.cancel('J5');
    const ids = ['J1', 'J2', 'J3', 'J4', 'J5'];
    for (const id of ['J1', 'J2', 'J3', 'J4', 'J5']) {
      const error = await expectNoChange(queue, ids, () => queue.retryDead(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
      expect(error.name).toBe('IllegalStateError');
    }
    await queue.complete('J3', running.token);
    await expectIllegalState(() => queue.retryDead('J3'));
  });

  it('refuses a second retryDead of the same job', async () => {
    const { queue, id } = await deadJob();
    await queue.retryDead(id);
    await expectIllegalState(() => queue.retryDead(id));
    expect((await queue.view(id)).status).toBe('PENDING');
  });
});

describeEachBackend('queueDepth and dlqDepth', (backend) => {
  it('track PENDING (ready + delayed) and DEAD jobs through retries', async () => {
    const s = await setup(backend, { maxAttempts: 2 });
    const { queue, clock } = s;
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b', 0, T0 + 100_000); // J2 delayed
    expect([await queue.queueDepth(), await queue.dlqDepth()]).toEqual([2, 0]);
    const a = await mustPoll(queue, 'J1');
    expect([await queue.queueDepth(), await queue.dlqDepth()]).toEqual([1, 0]);
    await queue.fail('J1', a.token, 'x'); // back to PENDING (delayed by backoff)
    expect([await queue.queueDepth(), await queue.dlqDepth()]).toEqual([2, 0]);
    clock.advance(1000);
    await queue.fail('J1', (await mustPoll(queue, 'J1')).token, 'y'); // DEAD
    expect([await queue.queueDepth(), await queue.dlqDepth()]).toEqual([1, 1]);
    await queue.retryDead('J1');
    expect([await queue.queueDepth(), await queue.dlqDepth()]).toEqual([2, 0]);
  });
});
