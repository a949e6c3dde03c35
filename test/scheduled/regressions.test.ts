/**
 * Scheduled histories that failed before the fix of the race they found:
 * each replays exactly (the scheduler's options), so each stays a test of
 * that fix. docs/concurrency.md ("What it found") tells each race.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkHistory, explainFailure } from '../../dist/testing/index.js';
import { ScheduledRecorder, replayCommand, type ScheduledHistoryOptions } from './recorder.js';

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
];

describe('scheduled histories that found a race', () => {
  const recorder = new ScheduledRecorder(4, 5);
  afterAll(() => recorder.close());

  it.each(CHECKED)('%s: now relaxed-poll', async (_name, options) => {
    const history = await recorder.record(options);
    const verdict = checkHistory(history.calls, history.setup, 'relaxed-poll');
    if (!verdict.ok) expect.fail(`${explainFailure(JSON.stringify(options), history.calls, history.setup, 'relaxed-poll')}\nreplay: ${replayCommand(options)}`);
  });
});
