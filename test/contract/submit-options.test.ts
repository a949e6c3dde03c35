import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { T0, bad, expectInvalid, killJob, mustPoll, setup, snapshot } from '../support/helpers.js';

describeEachBackend('submit: the options form', (backend) => {
  it('takes priority from the options: the higher runs first', async () => {
    const { queue } = await setup(backend);
    const low = await queue.submit('t', 'low', { priority: 1 });
    const high = await queue.submit('t', 'high', { priority: 5 });
    expect((await queue.view(high)).priority).toBe(5);
    expect((await mustPoll(queue)).jobId).toBe(high);
    expect((await mustPoll(queue)).jobId).toBe(low);
  });

  it('holds a job with runAt until that time', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p', { runAt: T0 + 500 });
    expect((await queue.view(id)).nextRunAt).toBe(T0 + 500);
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
    clock.advance(500);
    expect((await mustPoll(queue)).jobId).toBe(id);
  });

  it('holds a job with delayMillis for that long after the submit', async () => {
    const { queue, clock } = await setup(backend);
    clock.advance(123);
    const id = await queue.submit('t', 'p', { delayMillis: 250 });
    expect((await queue.view(id)).nextRunAt).toBe(T0 + 123 + 250);
    clock.advance(249);
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
    clock.advance(1);
    expect((await mustPoll(queue)).jobId).toBe(id);
  });

  it('runs a job with delayMillis 0, or empty options, at once with priority 0', async () => {
    const { queue } = await setup(backend);
    const a = await queue.submit('t', 'a', { delayMillis: 0 });
    const b = await queue.submit('t', 'b', {});
    for (const id of [a, b]) {
      const view = await queue.view(id);
      expect([view.nextRunAt, view.priority, view.status]).toEqual([T0, 0, 'PENDING']);
    }
  });

  it('dead-letters a job after its own maxAttempts, fewer than the policy has', async () => {
    const s = await setup(backend, { maxAttempts: 5, baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = await s.queue.submit('t', 'p', { maxAttempts: 2 });
    const other = await s.queue.submit('t', 'p');
    expect((await s.queue.view(id)).maxAttempts).toBe(2);
    expect((await s.queue.view(other)).maxAttempts).toBe(5);
    const first = await mustPoll(s.queue, id);
    expect([first.attempt, first.maxAttempts]).toEqual([1, 2]);
    await s.queue.fail(id, first.token, 'one');
    expect((await s.queue.view(id)).status).toBe('PENDING');
    const second = await mustPoll(s.queue, id);
    await s.queue.fail(id, second.token, 'two');
    expect((await s.queue.view(id)).status).toBe('DEAD');
    expect((await s.queue.deadLetters()).map((job) => [job.id, job.maxAttempts])).toEqual([[id, 2]]);
  });

  it('retries a job up to its own maxAttempts, more than the policy has, also when its leases expire', async () => {
    const s = await setup(backend, { maxAttempts: 1, baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = await s.queue.submit('t', 'p', { maxAttempts: 3 });
    for (let attempt = 1; attempt <= 2; attempt++) {
      const lease = await mustPoll(s.queue, id, 100);
      expect([lease.attempt, lease.maxAttempts]).toEqual([attempt, 3]);
      s.clock.advance(100);
      const view = await s.queue.view(id);
      expect([view.status, view.lastError]).toEqual(['PENDING', 'lease expired']);
    }
    await killJob(s, id);
    const view = await s.queue.view(id);
    expect([view.status, view.attempts]).toEqual(['DEAD', 3]);
  });

  it('gives a job its own maxAttempts again after retryDead', async () => {
    const s = await setup(backend, { maxAttempts: 1, baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = await s.queue.submit('t', 'p', { maxAttempts: 2 });
    for (let attempt = 1; attempt <= 2; attempt++) await s.queue.fail(id, (await mustPoll(s.queue, id)).token);
    expect((await s.queue.view(id)).status).toBe('DEAD');
    await s.queue.retryDead(id);
    const lease = await mustPoll(s.queue, id);
    expect([lease.attempt, lease.maxAttempts]).toEqual([1, 2]);
    await s.queue.fail(id, lease.token);
    expect((await s.queue.view(id)).status).toBe('PENDING');
  });

  it('keeps the positional form exactly: priority, then runAtMillis', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 4 });
    const late = await queue.submit('t', 'late', 9, T0 + 50);
    const now = await queue.submit('t', 'now', 2);
    const plain = await queue.submit('t');
    const viewOf = async (id: string) => {
      const { priority, nextRunAt, maxAttempts, payload } = await queue.view(id);
      return { priority, nextRunAt, maxAttempts, payload };
    };
    expect(await viewOf(late)).toEqual({ priority: 9, nextRunAt: T0 + 50, maxAttempts: 4, payload: 'late' });
    expect(await viewOf(now)).toEqual({ priority: 2, nextRunAt: T0, maxAttempts: 4, payload: 'now' });
    expect(await viewOf(plain)).toEqual({ priority: 0, nextRunAt: T0, maxAttempts: 4, payload: '' });
    clock.advance(50);
    expect((await mustPoll(queue)).jobId).toBe(late);
  });

  it('takes the same options per job in submitMany, and runAtMillis still', async () => {
    const { queue } = await setup(backend, { maxAttempts: 3 });
    const ids = await queue.submitMany([
      { type: 't', payload: 'a', priority: 1, maxAttempts: 7 },
      { type: 't', payload: 'b', delayMillis: 40 },
      { type: 't', payload: 'c', runAt: T0 + 60 },
      { type: 't', payload: 'd', runAtMillis: T0 + 80 },
    ]);
    const views = [];
    for (const id of ids) {
      const { priority, nextRunAt, maxAttempts } = await queue.view(id);
      views.push([priority, nextRunAt, maxAttempts]);
    }
    expect(views).toEqual([[1, T0, 7], [0, T0 + 40, 3], [0, T0 + 60, 3], [0, T0 + 80, 3]]);
  });

  it.each([
    ['runAt and delayMillis both', { runAt: T0 + 1, delayMillis: 1 }, 'at most one of runAt'],
    ['a negative delayMillis', { delayMillis: -1 }, 'delayMillis'],
    ['a delayMillis that is not finite', { delayMillis: Infinity }, 'delayMillis'],
    ['a delayMillis past 2^53 - 1, whose runAt could overflow to Infinity', { delayMillis: 1e308 }, 'at most 2^53 - 1'],
    ['a keyTtlMillis past 2^53 - 1', { key: 'k', keyTtlMillis: 2 ** 60 }, 'keyTtlMillis'],
    ['a runAt that is not a number', { runAt: '5' }, 'runAt'],
    ['maxAttempts 0', { maxAttempts: 0 }, 'maxAttempts'],
    ['a fractional maxAttempts', { maxAttempts: 1.5 }, 'maxAttempts'],
    ['a maxAttempts past 2^32 - 1', { maxAttempts: 2 ** 32 }, 'maxAttempts'],
    ['a fractional priority', { priority: 0.5 }, 'priority'],
    ['an option it does not know', { retries: 3 }, 'no keys but'],
    ['an array', [], 'options'],
    ['a null runAt (undefined is now; null is no time)', { runAt: null }, '`runAt` to be a finite number'],
    ['a null priority', { priority: null }, '`priority` to be an integer'],
    ['a null delayMillis', { delayMillis: null }, 'delayMillis'],
  ])('refuses %s and changes nothing', async (_name, options, message) => {
    const { queue } = await setup(backend);
    const kept = await queue.submit('t', 'kept');
    const before = await snapshot(queue, [kept, 'J2']);
    const error = await expectInvalid(() => queue.submit('t', 'p', bad(options)));
    expect(error.message).toContain(message);
    expect(await snapshot(queue, [kept, 'J2'])).toEqual(before);
    // No job number was spent on the refused submit.
    expect(await queue.submit('t', 'next')).toBe('J2');
  });

  it('refuses runAtMillis after the options object', async () => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit('t', 'p', {}, T0));
    expect((await queue.stats()).pending).toBe(0);
  });

  it('refuses a null runAtMillis in the positional form, as the options form refuses a null runAt', async () => {
    const { queue } = await setup(backend);
    expect((await expectInvalid(() => queue.submit('t', 'p', 0, bad(null)))).message).toContain('`runAtMillis` to be a finite number');
    expect((await expectInvalid(() => queue.submitMany([{ type: 't', runAtMillis: bad(null) }]))).message).toContain('runAtMillis');
    expect((await queue.stats()).pending).toBe(0);
  });

  it.each([
    ['a hole (a sparse array)', (jobs: unknown[]) => delete jobs[1], 'jobs[1]` to be an object, got a hole'],
    ['undefined', (jobs: unknown[]) => jobs.splice(1, 1, undefined), 'jobs[1]` to be an object, got `undefined`'],
    ['an array', (jobs: unknown[]) => jobs.splice(1, 1, []), 'jobs[1]` to be an object, got an array'],
    ['a number', (jobs: unknown[]) => jobs.splice(1, 1, 5), 'jobs[1]` to be an object'],
    ['null', (jobs: unknown[]) => jobs.splice(1, 1, null), 'jobs[1]` to be an object'],
  ])('refuses a submitMany with %s for a job, naming its index, and stores none of them', async (_name, spoil, message) => {
    const { queue } = await setup(backend);
    const kept = await queue.submit('t', 'kept');
    const jobs: unknown[] = [{ type: 't', payload: 'a' }, { type: 't', payload: 'b' }, { type: 't', payload: 'c' }];
    spoil(jobs);
    if (message.includes('hole')) expect(1 in jobs).toBe(false);
    const before = await snapshot(queue, [kept, 'J2']);
    expect((await expectInvalid(() => queue.submitMany(bad(jobs)))).message).toContain(message);
    expect(await snapshot(queue, [kept, 'J2'])).toEqual(before);
    expect(await queue.submit('t', 'next')).toBe('J2');
  });

  it('refuses a submitMany with one bad job, and stores none of them', async () => {
    const { queue } = await setup(backend);
    const error = await expectInvalid(() => queue.submitMany([
      { type: 't', payload: 'fine' },
      { type: 't', payload: 'bad', runAtMillis: T0, delayMillis: 5 },
    ]));
    expect(error.message).toContain('jobs[1]');
    expect((await queue.stats()).pending).toBe(0);
    expect(await queue.submit('t')).toBe('J1');
  });
});
