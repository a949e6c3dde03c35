/**
 * Scheduled histories that failed before the fix of the race they found:
 * each replays exactly (the scheduler's options), so each stays a test of
 * that fix. docs/concurrency.md ("What it found") tells each race.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkHistory, explainFailure } from '../../dist/testing/index.js';
import { ScheduledRecorder, replayCommand, type ScheduledHistoryOptions } from './recorder.js';
import { expectRecovered } from './recovery.js';

const CHECKED: [string, ScheduledHistoryOptions][] = [
  [
    'a journaled submit refused for room while the only finished job was frozen by its complete in flight',
    { seed: 1200, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 3 },
  ],
  [
    'a journaled poll that passed over a ready job frozen by its submit in flight, after stats() counted it',
    { seed: 1213, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 1 },
  ],
  [
    'a journaled poll that passed over a frozen ready job (a second history)',
    { seed: 1234, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 1 },
  ],
  [
    'a holder taken for dead placed its job after the takeover, its payload in chunks the taker had reused',
    { seed: 1054184676, backend: 'memory', threads: 4, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 1, step: 12, millis: 100 } },
  ],
  [
    'a locked poll taken for dead after its claim started again, and the job it had leased stayed RUNNING, unreported',
    { seed: 1054184704, backend: 'memory', threads: 2, calls: 5, strategy: 'pct', depth: 1, stall: { thread: 0, step: 49, millis: 100 } },
  ],
  [
    'a journaled poll taken for dead read the rings its successor rebuilt, and leased a worse job than the best',
    { seed: 1054184670, backend: 'journal', threads: 3, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 1, step: 65, millis: 100 } },
  ],
  [
    'a submit taken for dead took a slot past the capacity (RangeError in it and in the next rebuild)',
    { seed: 1054184767, backend: 'journal', threads: 3, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 2, step: 49, millis: 100 } },
  ],
  [
    'a commit leader taken for dead counted pending tickets from past the head, 2^32 of them',
    { seed: 1054184616, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 3, stall: { thread: 2, step: 43, millis: 100 } },
  ],
  [
    'a poller taken for dead moved a ring head past its tail after the rebuild restarted the positions (livelock)',
    { seed: 668744347, backend: 'memory', threads: 2, calls: 5, strategy: 'random', stall: { thread: 1, step: 64, millis: 100 } },
  ],
];

describe('scheduled histories that found a race', () => {
  const recorder = new ScheduledRecorder(4, 5);
  afterAll(() => recorder.close());

  it.each(CHECKED)('%s: now relaxed-poll, nothing leased twice or lost', async (_name, options) => {
    const history = await recorder.record(options);
    const verdict = checkHistory(history.calls, history.setup, 'relaxed-poll');
    if (!verdict.ok) expect.fail(`${explainFailure(JSON.stringify(options), history.calls, history.setup, 'relaxed-poll')}\nreplay: ${replayCommand(options)}`);
    await expectRecovered(history, replayCommand(options));
  });
});
