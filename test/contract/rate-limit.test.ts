import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { expectIllegalState, expectInvalid, mustPoll, setup } from '../support/helpers.js';

/** Windows of 1 s, aligned to the clock: setup's clock starts at T0 = 1_000_000, a window's start. */
const WINDOW = 1_000;

describeEachBackend('rate limits', (backend) => {
  it('hands out at most max jobs of a limited type per window, and max more once the next window opens', async () => {
    const { queue, clock } = await setup(backend);
    await queue.setRateLimit('email', { max: 2, windowMillis: WINDOW });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await queue.submit('email', `m${i}`));
    expect((await mustPoll(queue)).jobId).toBe(ids[0]);
    expect((await mustPoll(queue)).jobId).toBe(ids[1]);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    // Still within the window (its last millisecond): nothing more.
    clock.advance(WINDOW - 1);
    expect(await queue.poll('w2', 60_000)).toBeUndefined();
    // The next window: two more, in submission order.
    clock.advance(1);
    expect((await mustPoll(queue, undefined, 60_000)).jobId).toBe(ids[2]);
    expect((await mustPoll(queue, undefined, 60_000)).jobId).toBe(ids[3]);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    clock.advance(WINDOW);
    expect((await mustPoll(queue, undefined, 60_000)).jobId).toBe(ids[4]);
  });

  it('keeps a held job PENDING and ready in stats, and lets it be cancelled', async () => {
    const { queue } = await setup(backend);
    await queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    const first = await queue.submit('email', 'a');
    const second = await queue.submit('email', 'b');
    await mustPoll(queue, first, 60_000);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    expect((await queue.view(second)).status).toBe('PENDING');
    const stats = await queue.stats();
    expect([stats.pending, stats.ready, stats.running]).toEqual([1, 1, 1]);
    await queue.cancel(second);
    expect((await queue.view(second)).status).toBe('CANCELLED');
  });

  it('counts a held job as delayed, not ready, once the clock goes back before its runAt; it is held again when due', async () => {
    const { queue, clock } = await setup(backend);
    await queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    const first = await queue.submit('email', 'a');
    const second = await queue.submit('email', 'b');
    await mustPoll(queue, first, 60_000);
    expect(await queue.poll('w1', 60_000)).toBeUndefined(); // `second` is held now
    clock.advance(-500);
    expect(await queue.stats()).toMatchObject({ pending: 1, ready: 0, delayed: 1 });
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    clock.advance(500);
    expect(await queue.stats()).toMatchObject({ pending: 1, ready: 1, delayed: 0 });
    expect(await queue.poll('w1', 60_000)).toBeUndefined(); // the window is still used up
    clock.advance(WINDOW);
    expect((await mustPoll(queue, second, 60_000)).jobId).toBe(second);
    expect(await queue.stats()).toMatchObject({ pending: 0, ready: 0, running: 2 });
  });

  it('does not block other types: a poll passes over the limited jobs to the next best job', async () => {
    const { queue, clock } = await setup(backend);
    await queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    const emails = [await queue.submit('email', 'e1', 5), await queue.submit('email', 'e2', 5), await queue.submit('email', 'e3', 5)];
    const resize = await queue.submit('resize', 'r1', 1);
    const other = await queue.submit('resize', 'r2', 0);
    expect((await mustPoll(queue)).jobId).toBe(emails[0]);
    // e2 and e3 rank higher, but their window is used up.
    expect((await mustPoll(queue)).jobId).toBe(resize);
    expect((await mustPoll(queue)).jobId).toBe(other);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    // Their order among themselves is unchanged, and they rank first again once the window opens.
    const late = await queue.submit('resize', 'r3', 9);
    clock.advance(WINDOW);
    expect((await mustPoll(queue)).jobId).toBe(late);
    expect((await mustPoll(queue)).jobId).toBe(emails[1]);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    clock.advance(WINDOW);
    expect((await mustPoll(queue)).jobId).toBe(emails[2]);
  });

  it('counts the polls of completeAndPoll', async () => {
    const { queue } = await setup(backend);
    await queue.setRateLimit('email', { max: 2, windowMillis: WINDOW });
    const ids = [await queue.submit('email'), await queue.submit('email'), await queue.submit('email')];
    const first = await mustPoll(queue, ids[0]);
    const second = await queue.completeAndPoll(first.jobId, first.token, 'w1', 1_000);
    expect(second?.jobId).toBe(ids[1]);
    expect(await queue.completeAndPoll(second!.jobId, second!.token, 'w1', 1_000)).toBeUndefined();
    expect((await queue.view(ids[1]!)).status).toBe('SUCCEEDED');
  });

  it('lists the limits; a new limit replaces the old, and null removes it and hands out the held jobs', async () => {
    const { queue } = await setup(backend);
    expect(await queue.rateLimits()).toEqual([]);
    await queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    await queue.setRateLimit('sms', { max: 5, windowMillis: 60_000 });
    await queue.setRateLimit('email', { max: 2, windowMillis: WINDOW });
    await queue.setRateLimit('alerts', { max: 9, windowMillis: WINDOW });
    // By type, on every backend, whatever order they were set or first seen in.
    expect(await queue.rateLimits()).toEqual([
      { type: 'alerts', max: 9, windowMillis: WINDOW }, { type: 'email', max: 2, windowMillis: WINDOW }, { type: 'sms', max: 5, windowMillis: 60_000 },
    ]);
    await queue.setRateLimit('alerts', null);
    const ids = [await queue.submit('email'), await queue.submit('email'), await queue.submit('email')];
    await mustPoll(queue, ids[0]);
    await mustPoll(queue, ids[1]);
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
    await queue.setRateLimit('email', null);
    expect(await queue.rateLimits()).toEqual([{ type: 'sms', max: 5, windowMillis: 60_000 }]);
    expect((await mustPoll(queue)).jobId).toBe(ids[2]);
  });

  it('counts a new limit from when it is set, and a changed one on from the current count', async () => {
    const { queue } = await setup(backend);
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await queue.submit('email'));
    await mustPoll(queue, ids[0]);
    await queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    await mustPoll(queue, ids[1]);
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
    // One lease counted in this window: a max of 2 allows one more.
    await queue.setRateLimit('email', { max: 2, windowMillis: WINDOW });
    await mustPoll(queue, ids[2]);
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
  });

  it('refuses bad limits with InvalidArgumentError, and changes nothing', async () => {
    const { queue } = await setup(backend);
    await queue.setRateLimit('email', { max: 3, windowMillis: WINDOW });
    const bad: unknown[][] = [
      ['', { max: 1, windowMillis: 1 }],
      [42, { max: 1, windowMillis: 1 }],
      ['email', undefined],
      ['email', 5],
      ['email', [1, 2]],
      ['email', { max: 0, windowMillis: 1 }],
      ['email', { max: 1.5, windowMillis: 1 }],
      ['email', { max: -1, windowMillis: 1 }],
      ['email', { max: 2 ** 31, windowMillis: 1 }],
      ['email', { max: 1, windowMillis: 0 }],
      ['email', { max: 1, windowMillis: Number.NaN }],
      ['email', { max: 1, windowMillis: Infinity }],
      ['email', { max: 1 }],
      ['email', { max: 1, windowMillis: 1, burst: 2 }],
      ['email', { max: '1', windowMillis: 1 }],
    ];
    for (const [type, limit] of bad) {
      await expectInvalid(() => queue.setRateLimit(type as string, limit as { max: number; windowMillis: number }));
    }
    expect(await queue.rateLimits()).toEqual([{ type: 'email', max: 3, windowMillis: WINDOW }]);
  });

  it('refuses setRateLimit and rateLimits on a closed queue', async () => {
    const { queue } = await setup(backend);
    await queue.close();
    await expectIllegalState(() => queue.setRateLimit('email', { max: 1, windowMillis: 1 }));
    await expectIllegalState(() => queue.rateLimits());
  });
});
