/**
 * Histories of the real queue (`dist/`) under the deterministic scheduler:
 * real worker threads make the seeded random calls of `leasehold stress`
 * (src/cli/stress/plan.ts: submit, poll, complete, fail, extend,
 * completeAndPoll, cancel, retryDead, view, stats, and clock moves, so
 * leases expire inside calls), one step of the core at a time, in the order
 * PCT or a random walk picks. The checker must find an order of each that the model allows
 * (relaxed-poll, as docs/concurrency.md states). A failure prints the
 * options, which replay the history step for step.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkHistory, explainFailure, overlappingCalls } from '../../dist/testing/index.js';
import { testSeed } from '../support/helpers.js';
import { CALLS, MAX_THREADS, historyPlan, plansFor } from './plans.js';
import { ScheduledRecorder, replayCommand, type ScheduledBackend } from './recorder.js';

/** Per backend: 1,000 each, 2,000 in all; LEASEHOLD_SCHEDULED_HISTORIES=n runs n each (a longer search). */
const HISTORIES = Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000);

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('scheduled histories on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, CALLS);
  afterAll(() => recorder.close());

  const base = testSeed(`scheduled histories: ${backend}`);
  const plans = plansFor(backend, HISTORIES, (i) => historyPlan(base, i, backend));

  it.skipIf(plans.length === 0)(`finds a relaxed-poll order for each of ${plans.length} scheduled histories`, async () => {
    let steps = 0;
    let overlapping = 0;
    for (const options of plans) {
      const history = await recorder.record(options);
      steps += history.run.steps;
      overlapping += overlappingCalls(history.calls);
      const verdict = checkHistory(history.calls, history.setup, 'relaxed-poll');
      if (!verdict.ok) {
        expect.fail(`${explainFailure(`scheduled history ${JSON.stringify(options)}`, history.calls, history.setup, 'relaxed-poll')}\nreplay: ${replayCommand(options)}`);
      }
    }
    console.log(`[scheduled: ${backend}] ${plans.length} histories, ${steps} steps, ${overlapping} calls overlapping another thread's`);
    if (plans.length > 1) expect(overlapping, 'calls that overlapped a call of another thread').toBeGreaterThan(plans.length);
  }, 900_000);
});
