import { expect, it } from 'vitest';
import type { ScheduleOptions } from '../dist/index.js';
import { describeEachBackend } from './backends.js';
import { T0, bad, expectError, expectInvalid, setup, snapshot } from './helpers.js';
import { InvalidArgumentError } from '../dist/index.js';

/** 2026-01-05T00:00:00Z, a Monday in winter: Paris is UTC+1, New York UTC-5. */
const JAN_5 = Date.UTC(2026, 0, 5);
const HOUR = 3_600_000;

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
    expect(await Promise.all(fired.map(async (id) => (await queue.view(id)).key))).toEqual([
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
    const keys = await Promise.all(fired.map(async (id) => (await queue.view(id)).key));
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
      ['s', { everyMillis: 1_000, type: 't', startAt: Number.NaN }],
      ['s', { everyMillis: 1_000, type: 't', priority: 0.5 }],
      ['s', { everyMillis: 1_000, type: 't', maxAttempts: 0 }],
      ['s', { everyMillis: 1_000, type: 't', payload: 7 }],
      ['s', { everyMillis: 1_000, type: 't', every: 5 }],
      ['s', null],
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
