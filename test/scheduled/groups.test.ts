/**
 * Scheduled histories whose submits name groups (three, and ungrouped jobs:
 * the plan's `groups`), so that the lock-free claims from rings keyed by
 * turn race the lock holder's filing of turns, the overflow heap (a job
 * whose turn is below its ring's tail sends the polls to the lock), the
 * rebuild of the turns after a takeover, and, with edits, the refiling of
 * edited jobs with new turns (I27). The plans also cap, recap and uncap
 * the groups (./caps.test.ts has longer histories for that): while a cap is
 * set every poll takes the lock, and the checker's model holds each claim to
 * the caps.
 *
 * Checked in `relaxed-order` (docs/concurrency.md): everything relaxed-poll
 * checks but the order of jobs of one priority, which is the groups' turns
 * and not in the model. So each history must show no job leased twice,
 * exact attempts and leases, a poll that returned nothing only where no job
 * was ready, and a higher priority leased first; the held and stalled ones
 * must also lose nothing (./recovery.ts). A failure prints the options
 * (with `groups: true`), which replay the history step for step.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkHistory, doubleLeases, explainFailure } from '../../dist/testing/index.js';
import { testSeed } from '../support/helpers.js';
import { CALLS, MAX_THREADS, historyPlan, holdPlan, plansFor, stallPlan } from './plans.js';
import { ScheduledRecorder, replayCommand, type ScheduledBackend, type ScheduledHistoryOptions } from './recorder.js';
import { expectContractKept, expectRecovered } from './recovery.js';

/** Per backend: 400 plain (half with edits), 100 held, 100 stalled by default (LEASEHOLD_SCHEDULED_HISTORIES scales them). */
const HISTORIES = Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000) / 5;

const grouped = (options: ScheduledHistoryOptions, edits: boolean): ScheduledHistoryOptions => (edits ? { ...options, groups: true, edits } : { ...options, groups: true });

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('scheduled histories of grouped jobs, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, CALLS);
  afterAll(() => recorder.close());

  const plain = plansFor(backend, 2 * HISTORIES, (i) => grouped(historyPlan(testSeed(`scheduled groups: ${backend}`), i, backend), i % 2 === 1));
  it.skipIf(plain.length === 0)(`finds a relaxed-order order for each of ${plain.length} histories, and loses no job`, async () => {
    let groupedSubmits = 0;
    let leases = 0;
    for (const options of plain) {
      const history = await recorder.record(options);
      groupedSubmits += history.calls.filter((c) => c.call.op === 'submit' && c.call.group !== undefined && c.result.ok).length;
      leases += history.calls.filter((c) => (c.call.op === 'poll' || c.call.op === 'completeAndPoll') && c.result.ok && c.result.value !== undefined).length;
      const replay = replayCommand(options);
      if (!checkHistory(history.calls, history.setup, 'relaxed-order').ok) {
        expect.fail(`${explainFailure(`scheduled history ${JSON.stringify(options)}`, history.calls, history.setup, 'relaxed-order')}\nreplay: ${replay}`);
      }
      expect(doubleLeases(history.calls), `leased twice at once: ${replay}`).toEqual([]);
      await expectRecovered(history, replay);
    }
    console.log(`[scheduled groups: ${backend}] ${plain.length} histories, ${groupedSubmits} grouped submits, ${leases} leases`);
    // Most histories must submit grouped jobs and lease some, or they prove little.
    if (plain.length > 1) expect(groupedSubmits, 'grouped submits that made a job').toBeGreaterThan(plain.length);
    if (plain.length > 1) expect(leases, 'leases').toBeGreaterThan(plain.length);
  }, 900_000);

  const held = plansFor(backend, HISTORIES / 2, (i) => grouped(holdPlan(testSeed(`scheduled group holds: ${backend}`), i, backend), i % 2 === 1));
  it.skipIf(held.length === 0)(`keeps the contract in ${held.length} histories with a thread held inside another's call`, async () => {
    for (const options of held) await expectContractKept(await recorder.record(options), 'relaxed-order');
  }, 900_000);

  const stalled = plansFor(backend, HISTORIES / 2, (i) => grouped(stallPlan(testSeed(`scheduled group stalls: ${backend}`), i, backend), i % 2 === 1));
  it.skipIf(stalled.length === 0)(`keeps the contract in ${stalled.length} histories with a thread stalled past the patience`, async () => {
    for (const options of stalled) await expectContractKept(await recorder.record(options), 'relaxed-order');
  }, 900_000);
});
