/**
 * A thread held at a random step of a scheduled history until another thread
 * has taken a random number of steps: its next step lands in the middle of
 * the other thread's call. The history must pass the checker
 * (relaxed-poll), lease no job twice at once, and lose nothing
 * (./recovery.ts).
 */
import { afterAll, describe, it } from 'vitest';
import { testSeed } from '../support/helpers.js';
import { CALLS, MAX_THREADS, holdPlan, plansFor } from './plans.js';
import { ScheduledRecorder, type ScheduledBackend } from './recorder.js';
import { expectContractKept } from './recovery.js';

const HISTORIES = Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000) / 5;

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])("a thread held inside another thread's call, on $backend", ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, CALLS);
  afterAll(() => recorder.close());
  const base = testSeed(`scheduled holds: ${backend}`);
  const plans = plansFor(backend, HISTORIES, (i) => holdPlan(base, i, backend));

  it.skipIf(plans.length === 0)(`keeps the contract in ${plans.length} scheduled histories`, async () => {
    for (const options of plans) {
      await expectContractKept(await recorder.record(options));
    }
  }, 900_000);
});
