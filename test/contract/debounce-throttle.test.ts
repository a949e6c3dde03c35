import { expect, it } from 'vitest';
import { describeEachBackendAnd } from '../support/backends.js';
import { T0, expectInvalid, mustPoll, setup, snapshot } from '../support/helpers.js';

describeEachBackendAnd('debounce on the idempotent key', (backend) => {
  it('makes a new job that runs debounceMillis after now when the key is free', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('index', 'v1', { key: 'doc-1', debounceMillis: 500 });
    const view = await queue.view(id);
    expect(view.nextRunAt).toBe(T0 + 500);
    expect(view.key).toBe('doc-1');
    expect(await queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(500);
    expect((await mustPoll(queue, id)).payload).toBe('v1');
  });

  it('replaces a PENDING holder\'s payload and pushes its runAt to now + debounceMillis, in place', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('index', 'v1', { key: 'doc-1', debounceMillis: 500 });
    clock.advance(400);
    expect(await queue.submit('index', 'v2', { key: 'doc-1', debounceMillis: 500 })).toBe(id);
    const view = await queue.view(id);
    expect(view.nextRunAt).toBe(T0 + 900);
    expect(view.attempts).toBe(0);
    // Not due at the first submit's runAt any more: the runAt was pushed back.
    clock.advance(100);
    expect(await queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(400);
    const lease = await mustPoll(queue, id);
    expect(lease.payload).toBe('v2');
    // No job was made by the debounced submit.
    expect((await queue.stats()).running).toBe(1);
    expect((await queue.stats()).pending).toBe(0);
  });

  it('takes a ready holder back to delayed, and keeps its priority and headers', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('index', 'v1', { key: 'k', priority: 4, headers: { tenant: 'a' } });
    expect((await queue.stats()).ready).toBe(1);
    expect(await queue.submit('index', 'v2', { key: 'k', debounceMillis: 50, priority: 9, headers: { tenant: 'b' } })).toBe(id);
    expect((await queue.stats()).ready).toBe(0);
    expect(await queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(50);
    const lease = await mustPoll(queue, id);
    expect(lease.payload).toBe('v2');
    const view = await queue.view(id);
    expect(view.priority).toBe(4);
    expect(view.headers).toEqual({ tenant: 'a' });
  });

  it('makes a new job that takes the key when the holder is RUNNING, and leaves the running one alone', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('index', 'v1', { key: 'k' });
    const lease = await mustPoll(queue, id);
    const before = await snapshot(queue, [id]);
    const next = await queue.submit('index', 'v2', { key: 'k', debounceMillis: 100 });
    expect(next).not.toBe(id);
    expect((await snapshot(queue, [id])).views).toEqual(before.views);
    expect((await queue.view(next)).nextRunAt).toBe(T0 + 100);
    // The new job holds the key now: the next debounce edits it.
    clock.advance(10);
    expect(await queue.submit('index', 'v3', { key: 'k', debounceMillis: 100 })).toBe(next);
    expect(await queue.submit('index', 'plain', { key: 'k' })).toBe(next);
    await queue.complete(id, lease.token);
    clock.advance(100);
    expect((await mustPoll(queue, next)).payload).toBe('v3');
  });

  it('makes a new job when the holder finished, even within its keyTtlMillis', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'v1', { key: 'k', keyTtlMillis: 10_000 });
    const lease = await mustPoll(queue, id);
    await queue.complete(id, lease.token);
    expect(await queue.submit('t', 'v2', { key: 'k' })).toBe(id);
    const next = await queue.submit('t', 'v2', { key: 'k', debounceMillis: 10 });
    expect(next).not.toBe(id);
    expect((await queue.view(next)).payload).toBe('v2');
    expect((await queue.view(id)).status).toBe('SUCCEEDED');
  });

  it('refuses a bad debounce, naming the option, and changes nothing', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'v1', { key: 'k', debounceMillis: 100 });
    const before = await snapshot(queue, [id, 'J2']);
    const message = (error: Error) => error.message;
    expect(message(await expectInvalid(() => queue.submit('t', 'v2', { debounceMillis: 100 })))).toMatch(/debounceMillis needs one/);
    for (const bad of [0, -1, Number.NaN, Infinity, '5' as unknown as number]) {
      expect(message(await expectInvalid(() => queue.submit('t', 'v2', { key: 'k', debounceMillis: bad })))).toMatch(/debounceMillis/);
    }
    await expectInvalid(() => queue.submit('t', 'v2', { key: 'k', debounceMillis: 100, delayMillis: 5 }));
    await expectInvalid(() => queue.submit('t', 'v2', { key: 'k', debounceMillis: 100, runAt: T0 }));
    await expectInvalid(() => queue.submit('t', 'v2', { key: 'k', debounceMillis: 100, keyTtlMillis: 5 }));
    await expectInvalid(() => queue.submit('t', 'v2', { key: 'k', debounceMillis: 100, throttleMillis: 5 }));
    expect(message(await expectInvalid(() => queue.submitMany([{ type: 't', payload: 'v2', key: 'k', debounceMillis: 100 }])))).toMatch(/debounceMillis/);
    expect(await snapshot(queue, [id, 'J2'])).toEqual(before);
    expect((await queue.view(id)).payload).toBe('v1');
  });
});

describeEachBackendAnd('throttle on the idempotent key', (backend) => {
  it('keeps the key taken throttleMillis from the holder\'s submit, then makes the next job', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('sync', 'a', { key: 'acct', throttleMillis: 1_000 });
    clock.advance(999);
    const before = await snapshot(queue, [id, 'J2']);
    expect(await queue.submit('sync', 'b', { key: 'acct', throttleMillis: 1_000 })).toBe(id);
    expect(await snapshot(queue, [id, 'J2'])).toEqual(before);
    clock.advance(1);
    // The window is over though the holder is still PENDING: at most one job per window.
    const next = await queue.submit('sync', 'c', { key: 'acct', throttleMillis: 1_000 });
    expect(next).not.toBe(id);
    expect((await queue.view(id)).status).toBe('PENDING');
    expect(await queue.submit('sync', 'd', { key: 'acct', throttleMillis: 1_000 })).toBe(next);
  });

  it('counts the window from the submit, not from the finish', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('sync', 'a', { key: 'acct', throttleMillis: 1_000 });
    clock.advance(600);
    const lease = await mustPoll(queue, id);
    await queue.complete(id, lease.token);
    // 600 after the finish, 1200 after the submit: free (a TTL from the finish would still hold it).
    clock.advance(600);
    expect(await queue.submit('sync', 'b', { key: 'acct', throttleMillis: 1_000 })).not.toBe(id);
  });

  it('holds the key within the window after its job finished', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('sync', 'a', { key: 'acct', throttleMillis: 1_000 });
    const lease = await mustPoll(queue, id);
    await queue.fail(id, lease.token, 'boom');
    expect((await queue.view(id)).status).toBe('DEAD');
    clock.advance(999);
    expect(await queue.submit('sync', 'b', { key: 'acct', throttleMillis: 1_000 })).toBe(id);
    clock.advance(1);
    expect(await queue.submit('sync', 'b', { key: 'acct', throttleMillis: 1_000 })).not.toBe(id);
  });

  it('throttles job by job in submitMany', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('sync', 'a', { key: 'acct', throttleMillis: 1_000 });
    clock.advance(1_000);
    const ids = await queue.submitMany([
      { type: 'sync', payload: 'c', key: 'acct', throttleMillis: 1_000 },
      { type: 'sync', payload: 'd', key: 'acct', throttleMillis: 1_000 },
    ]);
    expect(ids[0]).not.toBe(id);
    expect(ids[1]).toBe(ids[0]);
    expect((await queue.view(ids[0]!)).payload).toBe('c');
    clock.advance(999);
    expect(await queue.submitMany([{ type: 'sync', payload: 'e', key: 'acct', throttleMillis: 1_000 }])).toEqual([ids[0]]);
  });

  it('refuses a bad throttle, naming the option, and changes nothing', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'v1', { key: 'k', throttleMillis: 100 });
    const before = await snapshot(queue, [id, 'J2']);
    expect((await expectInvalid(() => queue.submit('t', 'v2', { throttleMillis: 100 }))).message).toMatch(/throttleMillis needs one/);
    for (const bad of [0, -1, Number.NaN, Infinity, null as unknown as number]) {
      expect((await expectInvalid(() => queue.submit('t', 'v2', { key: 'k', throttleMillis: bad }))).message).toMatch(/throttleMillis/);
    }
    expect((await expectInvalid(() => queue.submit('t', 'v2', { key: 'k', throttleMillis: 100, keyTtlMillis: 5 }))).message).toMatch(/keyTtlMillis/);
    expect(await snapshot(queue, [id, 'J2'])).toEqual(before);
  });
});
