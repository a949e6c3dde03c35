/**
 * Scheduled histories whose threads also release leases (snoozes among
 * them), remove jobs and edit pending ones (changePriority, changeDelay,
 * promote, updatePayload), beside the calls of histories.test.ts: the moves
 * those calls make race claims, completes, expiries and each other one step
 * of the core at a time. Plain, held and stalled histories; each must pass the
 * checker (relaxed-poll), and a held or stalled one must also lease no job
 * twice at once and lose nothing (./recovery.ts). A failure prints the
 * options (with `edits: true`), which replay the history step for step.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkHistory, explainFailure } from '../../dist/testing/index.js';
import { testSeed } from '../support/helpers.js';
import { CALLS, MAX_THREADS, historyPlan, holdPlan, plansFor, stallPlan } from './plans.js';
import { ScheduledRecorder, replayCommand, type ScheduledBackend, type ScheduledHistoryOptions } from './recorder.js';
import { expectContractKept } from './recovery.js';

/** Per backend and kind: 200 plain, 100 held, 100 stalled by default (LEASEHOLD_SCHEDULED_HISTORIES scales them). */
const HISTORIES = Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000) / 5;
const EDIT_OPS = new Set(['release', 'remove', 'changePriority', 'changeDelay', 'promote', 'updatePayload']);

const withEdits = (options: ScheduledHistoryOptions): ScheduledHistoryOptions => ({ ...options, edits: true });

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('scheduled histories with releases, removes and edits, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, CALLS);
  afterAll(() => recorder.close());

  const plain = plansFor(backend, HISTORIES, (i) => withEdits(historyPlan(testSeed(`scheduled edits: ${backend}`), i, backend)));
  it.skipIf(plain.length === 0)(`finds a relaxed-poll order for each of ${plain.length} histories`, async () => {
    let edits = 0;
    let accepted = 0;
    for (const options of plain) {
      const history = await recorder.record(options);
      const made = history.calls.filter((c) => EDIT_OPS.has(c.call.op));
      edits += made.length;
      accepted += made.filter((c) => c.result.ok).length;
      if (!checkHistory(history.calls, history.setup, 'relaxed-poll').ok) {
        expect.fail(`${explainFailure(`scheduled history ${JSON.stringify(options)}`, history.calls, history.setup, 'relaxed-poll')}\nreplay: ${replayCommand(options)}`);
      }
    }
    console.log(`[scheduled edits: ${backend}] ${plain.length} histories, ${edits} releases, removes and edits, ${accepted} of them accepted`);
    // The mix must make these calls, and most of them must land on a job they can change, or the histories prove little.
    if (plain.length > 1) expect(accepted, 'releases, removes and edits that changed a job').toBeGreaterThan(plain.length / 2);
  }, 900_000);

  const held = plansFor(backend, HISTORIES / 2, (i) => withEdits(holdPlan(testSeed(`scheduled edit holds: ${backend}`), i, backend)));
  it.skipIf(held.length === 0)(`keeps the contract in ${held.length} histories with a thread held inside another's call`, async () => {
    for (const options of held) await expectContractKept(await recorder.record(options));
  }, 900_000);

  const stalled = plansFor(backend, HISTORIES / 2, (i) => withEdits(stallPlan(testSeed(`scheduled edit stalls: ${backend}`), i, backend)));
  it.skipIf(stalled.length === 0)(`keeps the contract in ${stalled.length} histories with a thread stalled past the patience`, async () => {
    for (const options of stalled) await expectContractKept(await recorder.record(options));
  }, 900_000);
});
