import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { tempJournal } from '../support/journal-harness.js';
import { T0, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';

const THREADS = 4;
/** How far the clock moves each round: a tick or several at once, and rounds where nothing is due. */
const STEPS = Array.from({ length: 60 }, (_, i) => [1_000, 2_500, 300, 4_000, 700][i % 5]!);
const END = T0 + STEPS.reduce((sum, step) => sum + step, 0);

/** Every tick of an interval from its first up to END. */
function ticksOf(first: number, every: number): number[] {
  return Array.from({ length: Math.floor((END - first) / every) + 1 }, (_, k) => first + k * every);
}

async function raceSchedulers(queue: JobQueue): Promise<string[][]> {
  const controlBuffer = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  const workers: RunningWorker[] = [];
  try {
    for (let index = 0; index < THREADS; index++) {
      workers.push(await startWorker('schedule-thread.mjs', { handle: queue.share(), index, parties: THREADS, steps: STEPS, controlBuffer }));
    }
    const reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 60_000, 'the scheduler threads')) as { fired: string[] }[];
    return reports.map((report) => report.fired);
  } finally {
    await terminateAll(workers);
  }
}

/** Each tick of each schedule has exactly one job, and exactly one thread was handed its id. */
function expectOneJobPerTick(queue: JobQueue, fired: string[][]): void {
  const all = fired.flat();
  const ids = Array.from({ length: queue.stats().pending }, (_, i) => `J${i + 1}`);
  expect([...all].sort()).toEqual([...ids].sort());
  // A job without a key (none should be) shows as '' and fails the comparison below.
  const keys = ids.map((id) => queue.view(id).key ?? '').sort();
  const expected = [
    ...ticksOf(T0 + 1_000, 1_000).map((tick) => `schedule:all:${tick}`),
    ...ticksOf(T0 + 1_500, 1_500).map((tick) => `schedule:slow:${tick}`),
  ];
  // 'one' fires the latest due tick of each round that has one: those ticks, and none twice.
  const latest = keys.filter((key) => key.startsWith('schedule:one:'));
  expect(new Set(latest).size).toBe(latest.length);
  expect(keys.filter((key) => !key.startsWith('schedule:one:'))).toEqual(expected.sort());
  expect(latest.length).toBeGreaterThan(0);
}

function schedule(queue: JobQueue): void {
  queue.schedule('all', { everyMillis: 1_000, type: 'a', missed: 'all' });
  queue.schedule('slow', { everyMillis: 1_500, type: 's', missed: 'all' });
  queue.schedule('one', { cron: '*/2 * * * * *', type: 'o' });
}

describe('schedulers racing in threads', () => {
  it('in memory: threads running schedulers at once make exactly one job per tick', async () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0));
    schedule(queue);
    expectOneJobPerTick(queue, await raceSchedulers(queue));
    queue.close();
  });

  it('with a journal: threads running schedulers at once make exactly one job per tick, and so it stays after a reopen', async () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const policy = new RetryPolicy(3, 0, 0);
    const queue = JobQueue.open(path, clock, policy);
    schedule(queue);
    const fired = await raceSchedulers(queue);
    expectOneJobPerTick(queue, fired);
    queue.close();
    const reopened = JobQueue.open(path, clock, policy);
    expectOneJobPerTick(reopened, fired);
    expect(reopened.runSchedules()).toEqual([]);
    reopened.close();
  });
});
