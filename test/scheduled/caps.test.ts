/**
 * Scheduled histories of grouped jobs whose groups are capped
 * (`setGroupConcurrency`, caps of 1 or 2): three in four start with a group
 * capped, and every thread may cap, recap or uncap a group mid-history (the
 * plan's `groups`), so that claims under the lock race the RUNNING counts
 * (I25): a poll at a cap while a lease of the group expires or its holder
 * completes lock-free, a cap lowered below the jobs running, a held job
 * filed back, a holder killed or stalled inside a move out of RUNNING. A
 * quarter of the histories each hold a thread inside another's call, stall
 * one past the patience, or kill one at a random step.
 *
 * Checked in `relaxed-order` with the model's caps (src/testing/checker.ts:
 * no poll leases past a cap; a poll may pass over a job its cap holds back),
 * and the queue must recover (./recovery.ts). A failure prints the options,
 * which replay the history step for step.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Call } from '../../dist/testing/index.js';
import { testSeed } from '../support/helpers.js';
import { MAX_THREADS, historyPlan, holdPlan, killPlan, plansFor, stallPlan } from './plans.js';
import { ScheduledRecorder, type ScheduledBackend } from './recorder.js';
import { cappedAt, expectContractKept, groupsOfJobs } from './recovery.js';

/** Per backend: 50 histories by default (LEASEHOLD_SCHEDULED_HISTORIES scales them: 1,000 is the default). */
const HISTORIES = Math.round(Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000) / 20);

const PLANS = [historyPlan, holdPlan, stallPlan, killPlan];
/** Calls per thread: more than the other suites' CALLS, so that a group's jobs pile up against its cap. */
const CAPPED_CALLS = 8;

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('scheduled histories of capped groups, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, CAPPED_CALLS);
  afterAll(() => recorder.close());

  const base = testSeed(`scheduled caps: ${backend}`);
  const plans = plansFor(backend, HISTORIES, (i) => ({ ...PLANS[i % PLANS.length]!(base, i, backend), calls: CAPPED_CALLS, groups: true }));
  it.skipIf(plans.length === 0)(`keeps every cap in each of ${plans.length} histories, and loses no job`, async () => {
    let capCalls = 0;
    let cappedLeases = 0;
    for (const options of plans) {
      const history = await recorder.record(options);
      capCalls += history.calls.filter((c) => c.call.op === 'setGroupConcurrency').length;
      cappedLeases += leasesUnderACap(history.calls);
      await expectContractKept(history, 'relaxed-order');
    }
    console.log(`[scheduled caps: ${backend}] ${plans.length} histories, ${capCalls} cap calls, ${cappedLeases} leases of a job whose group was capped`);
    // Most histories must cap a group and lease its jobs under the cap, or they prove little.
    if (plans.length > 1) expect(capCalls, 'cap calls').toBeGreaterThan(plans.length);
    if (plans.length > 1) expect(cappedLeases, 'leases under a cap').toBeGreaterThan(plans.length / 3);
  }, 900_000);
});

/** Leases of a job whose group had a cap set by a call that returned before the poll began (and not removed since). */
function leasesUnderACap(calls: readonly Call[]): number {
  const groupOf = groupsOfJobs(calls);
  return calls.filter((c) => {
    if ((c.call.op !== 'poll' && c.call.op !== 'completeAndPoll') || !c.result.ok || c.result.value === undefined) return false;
    return cappedAt(calls, groupOf((c.result.value as { jobId: string }).jobId), c);
  }).length;
}
