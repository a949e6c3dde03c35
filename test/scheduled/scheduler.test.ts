/**
 * The deterministic scheduler itself (src/scheduling/), on real histories of
 * the queue: a seed replays its interleaving step for step, a hold puts one
 * thread's step after another thread's, and a plan may stall more than one
 * thread.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ScheduledRecorder, type ScheduledHistoryOptions } from './recorder.js';

const TWO_THREADS: ScheduledHistoryOptions = { seed: 7, backend: 'memory', threads: 2, calls: 5, strategy: 'pct', depth: 1 };

/**
 * The index in `trace` of the `n`-th step of `thread`, -1 if it took fewer. A thread's first entry is its start,
 * no step; the histories here are of one thread at a time until the hold, so no entry before is a wait resumed.
 */
function stepAt(trace: Uint8Array, thread: number, n: number): number {
  let seen = 0;
  for (let i = 0; i < trace.length; i++) if (trace[i] === thread && ++seen === n + 1) return i;
  return -1;
}

/** Entries of `thread` in `trace` before index `end`. */
function entriesBefore(trace: Uint8Array, thread: number, end: number): number {
  let count = 0;
  for (let i = 0; i < end; i++) if (trace[i] === thread) count++;
  return count;
}

describe('the deterministic scheduler', () => {
  const recorder = new ScheduledRecorder(2, 5);
  afterAll(() => recorder.close());

  it('replays a seed step for step: the same trace, the same calls and results', async () => {
    const options: ScheduledHistoryOptions = { seed: 11, backend: 'memory', threads: 2, calls: 5, strategy: 'random' };
    const first = await recorder.record(options);
    const again = await recorder.record(options);
    expect(Buffer.from(again.run.trace).equals(Buffer.from(first.run.trace))).toBe(true);
    const calls = (h: typeof first) => h.calls.map((c) => [c.thread, c.call, c.result]);
    expect(calls(again)).toEqual(calls(first));
  });

  it('holds a thread at its step until the other thread has taken its own', async () => {
    // PCT of depth 1 runs the higher-priority thread alone for as long as it can: find which one that is.
    const free = await recorder.record(TWO_THREADS);
    const first = free.run.trace[0]!;
    const other = 1 - first;
    expect(entriesBefore(free.run.trace, other, stepAt(free.run.trace, first, 10)), 'without the hold, the other thread waits').toBeLessThan(30);
    const held = await recorder.record({ ...TWO_THREADS, hold: { thread: first, step: 10, until: { thread: other, step: 30 } } });
    const tenth = stepAt(held.run.trace, first, 10);
    expect(tenth).toBeGreaterThan(0);
    // The other thread's start and its first 30 steps.
    expect(entriesBefore(held.run.trace, other, tenth)).toBeGreaterThanOrEqual(31);
  });

  it('stalls each thread a plan names, once each', async () => {
    const history = await recorder.record({
      ...TWO_THREADS,
      stall: [
        { thread: 0, step: 5, millis: 50 },
        { thread: 1, step: 5, millis: 70 },
      ],
    });
    expect([...history.run.stalled].sort()).toEqual([0, 1]);
    expect(history.run.virtualMillis).toBeGreaterThanOrEqual(70);
  });
});
