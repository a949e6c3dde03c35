import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidArgumentError, JobQueue, ManualClock, RetryPolicy, type ScheduleOptions } from '../../dist/index.js';
import { tempJournal } from '../support/journal-harness.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { T0, bad, expectError, expectInvalid, setup, snapshot, waitUntil } from '../support/helpers.js';

/** 2026-01-05T00:00:00Z, a Monday in winter: Paris is UTC+1, New York UTC-5. */
const JAN_5 = Date.UTC(2026, 0, 5);
const HOUR = 3_600_000;

/** The keys of the jobs `ids`, one view at a time (a remote backend takes one call at a time). */
async function keysOf(queue: ContractQueue, ids: readonly string[]): Promise<(string | null)[]> {
  const keys: (string | null)[] = [];
  for (const id of ids) keys.push((await queue.view(id)).key);
  return keys;
}

describeEachBackend('repeatable jobs', (backend) => {
  it('fires one job per interval tick, ready from its tick, and moves on to the next', async () => {
    const { queue, clock } = await setup(backend);
    const made = await queue.schedule('beat', { everyMillis: 1_000, type: 'ping', payload: 'p', priority: 3, maxAttempts: 2 });
    expect(made.nextTick).toBe(T0 + 1_000);
    clock.advance(999);
    expect(await queue.runSchedules()).toEqual([]);
    clock.advance(1);
    const [id, ...more] = await queue.runSchedules();
    expect(more).toEqual([]);
    const view = await queue.view(id!);
    expect([view.type, view.payload, view.priority, view.maxAttempts, view.nextRunAt, view.status]).toEqual(['ping', 'p', 3, 2, T0 + 1_000, 'PENDING']);
    expect(view.key).toBe(`schedule:beat:${T0 + 1_000}`);
    expect((await queue.schedules()).map((s) => s.nextTick)).toEqual([T0 + 2_000]);
    expect(await queue.runSchedules()).toEqual([]);
    clock.advance(1_000);
    const [second] = await queue.runSchedules();
    expect(second).not.toBe(id);
    expect((await queue.view(second!)).key).toBe(`schedule:beat:${T0 + 2_000}`);
    expect((await queue.stats()).pending).toBe(2);
  });

  it('fires the schedules due at once earliest tick first, then by name, on every backend', async () => {
    const { queue, clock } = await setup(backend);
    // Due at T0 + 250 (b), T0 + 300 (a and c), T0 + 400 (d): names and ticks in different orders.
    await queue.schedule('d', { type: 'd', everyMillis: 400 });
    await queue.schedule('c', { type: 'c', everyMillis: 300 });
    await queue.schedule('b', { type: 'b', everyMillis: 250 });
    await queue.schedule('a', { type: 'a', everyMillis: 300 });
    clock.advance(400);
    const ids = await queue.runSchedules();
    expect(ids).toEqual(['J1', 'J2', 'J3', 'J4']);
    expect(await keysOf(queue, ids)).toEqual([`schedule:b:${T0 + 250}`, `schedule:a:${T0 + 300}`, `schedule:c:${T0 + 300}`, `schedule:d:${T0 + 400}`]);
  });

  it('starts an interval at startAt, and fires nothing before', async () => {
    const { queue, clock } = await setup(backend);
    expect((await queue.schedule('later', { everyMillis: 500, startAt: T0 + 10_000, type: 't' })).nextTick).toBe(T0 + 10_000);
    clock.advance(9_999);
    expect(await queue.runSchedules()).toEqual([]);
    clock.advance(1);
    expect(await queue.runSchedules()).toHaveLength(1);
    expect((await queue.schedules())[0]!.nextTick).toBe(T0 + 10_500);
  });

  it('reads a cron expression in UTC by default, and in the time zone given', async () => {
    const { queue, clock } = await setup(backend, { start: JAN_5 });
    const utc = await queue.schedule('utc', { cron: '0 9 * * *', type: 't' });
    const paris = await queue.schedule('paris', { cron: '0 9 * * *', timeZone: 'Europe/Paris', type: 't' });
    const york = await queue.schedule('york', { cron: '0 9 * * *', timeZone: 'America/New_York', type: 't' });
    expect([utc.nextTick, paris.nextTick, york.nextTick]).toEqual([JAN_5 + 9 * HOUR, JAN_5 + 8 * HOUR, JAN_5 + 14 * HOUR]);
    clock.set(JAN_5 + 8 * HOUR);
    const [parisJob] = await queue.runSchedules();
    expect((await queue.view(parisJob!)).key).toBe(`schedule:paris:${JAN_5 + 8 * HOUR}`);
    clock.set(JAN_5 + 14 * HOUR);
    const fired = await queue.runSchedules();
    expect(await keysOf(queue, fired)).toEqual([
      `schedule:utc:${JAN_5 + 9 * HOUR}`, `schedule:york:${JAN_5 + 14 * HOUR}`,
    ]);
    expect((await queue.schedules()).map((s) => [s.name, s.nextTick])).toEqual([
      ['paris', JAN_5 + 32 * HOUR], ['utc', JAN_5 + 33 * HOUR], ['york', JAN_5 + 38 * HOUR],
    ]);
  });

  it('takes a cron expression with seconds', async () => {
    const { queue, clock } = await setup(backend, { start: JAN_5 });
    expect((await queue.schedule('fast', { cron: '*/15 * * * * *', type: 't' })).nextTick).toBe(JAN_5);
    expect(await queue.runSchedules()).toHaveLength(1);
    clock.advance(15_000);
    expect(await queue.runSchedules()).toHaveLength(1);
    expect((await queue.schedules())[0]!.nextTick).toBe(JAN_5 + 30_000);
  });

  it("makes one job for the latest missed tick by default ('one')", async () => {
    const { queue, clock } = await setup(backend);
    await queue.schedule('s', { everyMillis: 1_000, type: 't' });
    clock.advance(5_500);
    const fired = await queue.runSchedules();
    expect(fired).toHaveLength(1);
    expect((await queue.view(fired[0]!)).key).toBe(`schedule:s:${T0 + 5_000}`);
    expect((await queue.schedules())[0]!.nextTick).toBe(T0 + 6_000);
  });

  it("makes a job for every missed tick with 'all', oldest first, the latest maxMissed of them", async () => {
    const { queue, clock } = await setup(backend);
    await queue.schedule('every', { everyMillis: 1_000, type: 't', missed: 'all' });
    await queue.schedule('capped', { everyMillis: 1_000, type: 't', missed: 'all', maxMissed: 3 });
    clock.advance(5_500);
    const fired = await queue.runSchedules();
    const keys = await keysOf(queue, fired);
    const ticks = (name: string, from: number) => [1, 2, 3, 4, 5].filter((k) => k >= from).map((k) => `schedule:${name}:${T0 + k * 1_000}`);
    expect(keys).toEqual([...ticks('capped', 3), ...ticks('every', 1)]);
    expect((await queue.schedules()).map((s) => s.nextTick)).toEqual([T0 + 6_000, T0 + 6_000]);
  });

  it("skips missed ticks with 'none', but fires a tick found within graceMillis", async () => {
    const { queue, clock } = await setup(backend);
    await queue.schedule('s', { everyMillis: 1_000, type: 't', missed: 'none', graceMillis: 100 });
    clock.advance(5_500);
    expect(await queue.runSchedules()).toEqual([]);
    expect((await queue.schedules())[0]!.nextTick).toBe(T0 + 6_000);
    expect((await queue.stats()).pending).toBe(0);
    clock.advance(600);
    expect(await queue.runSchedules()).toHaveLength(1);
  });

  it('lists schedules by name with their definition, and removes them', async () => {
    const { queue, clock } = await setup(backend);
    await queue.schedule('b', { everyMillis: 250, type: 'tb' });
    await queue.schedule('a', { cron: '*/5 * * * *', timeZone: 'Asia/Tokyo', type: 'ta', payload: 'x', missed: 'all', maxMissed: 7 });
    expect(await queue.schedules()).toEqual([
      {
        name: 'a', cron: '*/5 * * * *', everyMillis: null, timeZone: 'Asia/Tokyo', startAt: T0, type: 'ta', payload: 'x', priority: 0,
        maxAttempts: null, missed: 'all', maxMissed: 7, graceMillis: 60_000, nextTick: 1_200_000,
      },
      {
        name: 'b', cron: null, everyMillis: 250, timeZone: null, startAt: T0 + 250, type: 'tb', payload: null, priority: 0,
        maxAttempts: null, missed: 'one', maxMissed: 100, graceMillis: 60_000, nextTick: T0 + 250,
      },
    ]);
    expect(await queue.unschedule('b')).toBe(true);
    expect(await queue.unschedule('b')).toBe(false);
    expect(await queue.unschedule('nothing')).toBe(false);
    expect((await queue.schedules()).map((s) => s.name)).toEqual(['a']);
    clock.advance(1_000);
    expect(await queue.runSchedules()).toEqual([]);
  });

  it('replaces the schedule of the same name, from now', async () => {
    const { queue, clock } = await setup(backend);
    await queue.schedule('s', { everyMillis: 1_000, type: 'old' });
    clock.advance(300);
    await queue.schedule('s', { everyMillis: 5_000, type: 'new' });
    expect((await queue.schedules()).map((s) => [s.type, s.everyMillis, s.nextTick])).toEqual([['new', 5_000, T0 + 5_300]]);
    clock.advance(1_000);
    expect(await queue.runSchedules()).toEqual([]);
  });

  it('makes no second job for a tick whose job a stopped scheduler submitted before it moved the schedule on', async () => {
    const { queue, clock } = await setup(backend);
    await queue.schedule('s', { everyMillis: 1_000, type: 't' });
    clock.advance(1_000);
    // What a scheduler that stopped between its submit and its compare-and-set left behind.
    const orphan = await queue.submit('t', null, { key: `schedule:s:${T0 + 1_000}`, runAt: T0 + 1_000 });
    expect(await queue.runSchedules()).toEqual([orphan]);
    expect((await queue.stats()).pending).toBe(1);
    expect((await queue.schedules())[0]!.nextTick).toBe(T0 + 2_000);
  });

  it('refuses bad schedules with InvalidArgumentError and changes nothing', async () => {
    const { queue } = await setup(backend);
    await queue.schedule('kept', { everyMillis: 1_000, type: 't' });
    const before = [await queue.schedules(), await snapshot(queue, [])];
    const refused: [unknown, unknown][] = [
      ['s', { type: 't' }],
      ['s', { cron: '* * * * *', everyMillis: 1_000, type: 't' }],
      ['s', { cron: 'not a cron', type: 't' }],
      ['s', { cron: '61 * * * *', type: 't' }],
      ['s', { cron: '0 0 30 2 *', type: 't' }],
      ['s', { cron: '* * * * *', timeZone: 'Mars/Olympus', type: 't' }],
      ['s', { everyMillis: 1_000, timeZone: 'Europe/Paris', type: 't' }],
      ['s', { everyMillis: 0, type: 't' }],
      ['s', { everyMillis: 1.5, type: 't' }],
      ['s', { everyMillis: 1_000 }],
      ['s', { everyMillis: 1_000, type: 't', missed: 'some' }],
      ['s', { everyMillis: 1_000, type: 't', maxMissed: 0 }],
      ['s', { everyMillis: 1_000, type: 't', graceMillis: -1 }],
      ['s', { everyMillis: 1_000, type: 't', graceMillis: 2 ** 53 }],
      ['s', { everyMillis: 1_000, type: 't', startAt: Number.NaN }],
      ['s', { everyMillis: 1_000, type: 't', priority: 0.5 }],
      ['s', { everyMillis: 1_000, type: 't', maxAttempts: 0 }],
      ['s', { everyMillis: 1_000, type: 't', payload: 7 }],
      ['s', { everyMillis: 1_000, type: 't', every: 5 }],
      // null is a value, not a default (as in submit's options): refused like any other that is not a number.
      ['s', { everyMillis: 1_000, type: 't', priority: null }],
      ['s', { everyMillis: 1_000, type: 't', startAt: null }],
      ['s', { everyMillis: 1_000, type: 't', maxMissed: null }],
      ['s', null],
      ['s', [{ everyMillis: 1_000, type: 't' }]],
      ['', { everyMillis: 1_000, type: 't' }],
      [7, { everyMillis: 1_000, type: 't' }],
      ['x'.repeat(201), { everyMillis: 1_000, type: 't' }],
      ['kept', { everyMillis: 1_000, type: 't', missed: 'some' }],
    ];
    for (const [name, options] of refused) {
      await expectInvalid(() => queue.schedule(bad(name), bad(options) as ScheduleOptions));
    }
    await expectError(() => queue.unschedule(bad(7)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    expect([await queue.schedules(), await snapshot(queue, [])]).toEqual(before);
  });
});

describe('repeatable jobs: durable, and on a timer', () => {
  it('keeps schedules in the journal across a reopen, and fires there the tick missed while it was closed', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const policy = new RetryPolicy(3, 0, 0);
    const first = JobQueue.open(path, clock, policy);
    first.schedule('s', { everyMillis: 1_000, type: 't', payload: 'p' });
    first.schedule('gone', { cron: '* * * * *', type: 't' });
    clock.advance(1_000);
    const [fired] = first.runSchedules();
    first.unschedule('gone');
    const listed = first.schedules();
    first.close();

    const reopened = JobQueue.open(path, clock, policy);
    expect(reopened.schedules()).toEqual(listed);
    expect(reopened.view(fired!).key).toBe(`schedule:s:${T0 + 1_000}`);
    clock.advance(10_500);
    const [late, ...more] = reopened.runSchedules();
    expect(more).toEqual([]);
    expect([reopened.view(late!).key, reopened.view(late!).payload]).toEqual([`schedule:s:${T0 + 11_000}`, 'p']);
    reopened.close();
  });

  it('after a process died between a tick\'s submit and its schedule\'s move, the reopened journal fires no second job for that tick', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const policy = new RetryPolicy(3, 0, 0);
    const first = JobQueue.open(path, clock, policy);
    first.schedule('s', { everyMillis: 1_000, type: 't' });
    clock.advance(1_000);
    // What the dead process committed: the tick's job, and not the schedule's move.
    const orphan = first.submit('t', null, { key: `schedule:s:${T0 + 1_000}`, runAt: T0 + 1_000 });
    first.close();
    const reopened = JobQueue.open(path, clock, policy);
    expect(reopened.runSchedules()).toEqual([orphan]);
    expect([reopened.stats().pending, reopened.schedules()[0]!.nextTick]).toEqual([1, T0 + 2_000]);
    reopened.close();
  });

  it('refuses a schedule that does not fit the shared memory table with QueueFullError, changing nothing', () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0));
    onTestFinished(() => queue.close());
    queue.schedule('small', { everyMillis: 1_000, type: 't' });
    const before = queue.schedules();
    expect(() => queue.schedule('big', { everyMillis: 1_000, type: 't', payload: 'x'.repeat(200_000) })).toThrow(
      expect.objectContaining({ code: 'ERR_QUEUE_FULL' }),
    );
    expect(queue.schedules()).toEqual(before);
  });

  it('a scheduler started on a timer fires each due tick, until stopped', async () => {
    const clock = new ManualClock(T0);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    onTestFinished(() => queue.close());
    queue.schedule('s', { everyMillis: 1_000, type: 't' });
    const errors: unknown[] = [];
    const scheduler = queue.startScheduler({ intervalMillis: 2, onError: (error) => errors.push(error) });
    clock.advance(1_000);
    await waitUntil('the first tick fired', () => queue.stats().pending === 1);
    clock.advance(1_000);
    await waitUntil('the second tick fired', () => queue.stats().pending === 2);
    await scheduler.stop();
    clock.advance(1_000);
    expect(queue.runSchedules()).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('refuses bad scheduler options with InvalidArgumentError, and a closed queue starts none', () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0));
    for (const options of [{ intervalMillis: 0 }, { intervalMillis: 1.5 }, { intervalMillis: null }, { onError: 'log' }, 'fast', []]) {
      expect(() => queue.startScheduler(bad(options))).toThrow(InvalidArgumentError);
    }
    expect(() => queue.startScheduler(bad({ intervalMilis: 5 }))).toThrow(/no keys but intervalMillis, onError, got `intervalMilis`/);
    queue.close();
    expect(() => queue.startScheduler()).toThrow(expect.objectContaining({ code: 'ERR_ILLEGAL_STATE' }));
  });
});
