import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { T0, bad, expectFull, expectInvalid, mustPoll, setup, snapshot } from '../support/helpers.js';

describeEachBackend('idempotent submit', (backend) => {
  it('returns the existing job for a key while it is PENDING, and changes nothing', async () => {
    const { queue } = await setup(backend);
    const first = await queue.submit('email', 'to: ada', { key: 'welcome-ada', priority: 3 });
    const before = await snapshot(queue, [first, 'J2']);
    const again = await queue.submit('email', 'something else', { key: 'welcome-ada', priority: 9, delayMillis: 50 });
    expect(again).toBe(first);
    expect(await snapshot(queue, [first, 'J2'])).toEqual(before);
    expect((await queue.view(first)).key).toBe('welcome-ada');
    // No job number was spent on the repeat.
    expect(await queue.submit('email', 'other')).toBe('J2');
    expect((await queue.view('J2')).key).toBeNull();
  });

  it('returns the existing job while it is RUNNING, without touching its lease', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p', { key: 'k' });
    const lease = await mustPoll(queue, id);
    const before = await snapshot(queue, [id]);
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe(id);
    expect(await snapshot(queue, [id])).toEqual(before);
    await queue.complete(id, lease.token);
  });

  it.each(['SUCCEEDED', 'DEAD', 'CANCELLED'] as const)('frees the key once its job is %s (no keyTtlMillis)', async (status) => {
    const { queue } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', 'p', { key: 'k' });
    if (status === 'CANCELLED') await queue.cancel(id);
    else {
      const lease = await mustPoll(queue, id);
      if (status === 'SUCCEEDED') await queue.complete(id, lease.token);
      else await queue.fail(id, lease.token, 'boom');
    }
    expect((await queue.view(id)).status).toBe(status);
    const next = await queue.submit('t', 'again', { key: 'k' });
    expect(next).toBe('J2');
    expect((await queue.view(next)).key).toBe('k');
    // The new job holds the key now.
    expect(await queue.submit('t', 'third', { key: 'k' })).toBe(next);
  });

  it('frees a key when its lease expires into DEAD', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', 'p', { key: 'k', keyTtlMillis: 100 });
    await mustPoll(queue, id, 50);
    clock.advance(50);
    expect((await queue.view(id)).status).toBe('DEAD');
    // The TTL runs from the lease's end, when the attempt failed.
    clock.advance(99);
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe(id);
    clock.advance(1);
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe('J2');
  });

  it('holds the key keyTtlMillis after the job finished, then frees it', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p', { key: 'order-7', keyTtlMillis: 1_000 });
    const lease = await mustPoll(queue, id);
    clock.advance(200);
    await queue.complete(id, lease.token);
    clock.advance(999);
    const before = await snapshot(queue, [id, 'J2']);
    expect(await queue.submit('t', 'p', { key: 'order-7', keyTtlMillis: 1_000 })).toBe(id);
    expect(await snapshot(queue, [id, 'J2'])).toEqual(before);
    clock.advance(1);
    expect(await queue.submit('t', 'p', { key: 'order-7' })).toBe('J2');
  });

  it('keys are exact strings: another key, or the same text with another case, is another job', async () => {
    const { queue } = await setup(backend);
    const ids = [
      await queue.submit('t', 'p', { key: 'a' }),
      await queue.submit('t', 'p', { key: 'A' }),
      await queue.submit('t', 'p', { key: 'a ' }),
      await queue.submit('t', 'p', { key: 'ключ-🙂' }),
      await queue.submit('t', 'p', { key: 'ключ-🙂' }),
    ];
    expect(ids).toEqual(['J1', 'J2', 'J3', 'J4', 'J4']);
    expect((await queue.stats()).pending).toBe(4);
  });

  it('frees the key of a finished job that is evicted for room, even within its TTL', async () => {
    const { queue } = await setup(backend, { options: { capacity: 2 } });
    const id = await queue.submit('t', 'p', { key: 'k', keyTtlMillis: 1_000_000 });
    await queue.complete(id, (await mustPoll(queue, id)).token);
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe(id);
    await queue.submit('t', 'filler');
    // Full: this submit evicts the finished J1, and with it its key.
    await queue.submit('t', 'filler');
    expect((await queue.stats()).succeeded).toBe(0);
    // The queue is full of PENDING jobs now; the key is free, so the submit needs room it does not have.
    await expectFull(() => queue.submit('t', 'p', { key: 'k' }));
    await queue.complete('J2', (await mustPoll(queue, 'J2')).token);
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe('J4');
  });

  it('keeps a job and its key through retries: a failed attempt that will retry holds the key', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 3 });
    const id = await queue.submit('t', 'p', { key: 'k' });
    await queue.fail(id, (await mustPoll(queue, id)).token, 'flaky');
    expect((await queue.view(id)).status).toBe('PENDING');
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe(id);
    clock.advance(100);
    await mustPoll(queue, id);
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe(id);
  });

  it('submitMany: a key already taken gets the holder, a key twice in the batch gets the first, the rest are stored', async () => {
    const { queue } = await setup(backend);
    const taken = await queue.submit('t', 'old', { key: 'taken' });
    const ids = await queue.submitMany([
      { type: 't', payload: 'a', key: 'new' },
      { type: 't', payload: 'b', key: 'taken' },
      { type: 't', payload: 'c' },
      { type: 't', payload: 'd', key: 'new', priority: 5 },
      { type: 't', payload: 'e', key: 'fresh' },
      { type: 't', payload: 'f', key: 'fresh' },
    ]);
    expect(ids).toEqual(['J2', taken, 'J3', 'J2', 'J4', 'J4']);
    expect((await queue.stats()).pending).toBe(4);
    expect(await queue.view('J2')).toMatchObject({ payload: 'a', priority: 0, key: 'new' });
    expect(await queue.view(taken)).toMatchObject({ payload: 'old', key: 'taken' });
    expect(await queue.view('J4')).toMatchObject({ payload: 'e', key: 'fresh' });
    expect(await queue.submit('t', 'next')).toBe('J5');
  });

  it('submitMany whose every key is taken stores nothing and spends no id', async () => {
    const { queue } = await setup(backend);
    const a = await queue.submit('t', 'a', { key: 'a' });
    const before = await snapshot(queue, [a, 'J2']);
    expect(await queue.submitMany([{ type: 't', key: 'a' }, { type: 't', key: 'a' }])).toEqual([a, a]);
    expect(await snapshot(queue, [a, 'J2'])).toEqual(before);
    expect(await queue.submit('t')).toBe('J2');
  });

  it.each([
    ['an empty key', { key: '' }, 'key'],
    ['a key that is not a string', { key: 7 }, 'key'],
    ['a key of 257 bytes', { key: 'é'.repeat(128) + 'x' }, 'key'],
    ['a key with a lone surrogate', { key: 'a\ud800' }, 'key'],
    ['keyTtlMillis without a key', { keyTtlMillis: 5 }, 'keyTtlMillis needs one'],
    ['a negative keyTtlMillis', { key: 'k', keyTtlMillis: -1 }, 'keyTtlMillis'],
    ['a keyTtlMillis that is not finite', { key: 'k', keyTtlMillis: Infinity }, 'keyTtlMillis'],
  ])('refuses %s and changes nothing', async (_name, options, message) => {
    const { queue } = await setup(backend);
    const kept = await queue.submit('t', 'kept', { key: 'k' });
    const before = await snapshot(queue, [kept, 'J2']);
    const error = await expectInvalid(() => queue.submit('t', 'p', bad(options)));
    expect(error.message).toContain(message);
    await expectInvalid(() => queue.submitMany([{ type: 't', key: 'other' }, bad({ type: 't', ...options })]));
    expect(await snapshot(queue, [kept, 'J2'])).toEqual(before);
    expect(await queue.submit('t', 'p', { key: 'other' })).toBe('J2');
  });

  it('takes a key of exactly 256 UTF-8 bytes', async () => {
    const { queue } = await setup(backend);
    const key = 'é'.repeat(128);
    const id = await queue.submit('t', 'p', { key });
    expect((await queue.view(id)).key).toBe(key);
    expect(await queue.submit('t', 'p', { key })).toBe(id);
  });

  it('holds the key of a job retried from the dead letters again, while it is PENDING', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', 'p', { key: 'k', keyTtlMillis: 10 });
    await queue.fail(id, (await mustPoll(queue, id)).token);
    clock.advance(T0);
    await queue.retryDead(id);
    expect(await queue.submit('t', 'p', { key: 'k' })).toBe(id);
  });
});
