/**
 * A thread stalled past the queue's patience at a random step of a
 * scheduled history: presumed dead, its lock taken over or its call helped
 * through, it wakes later, finds it so and goes on. The history must still
 * pass the checker (relaxed-poll; a submit in the stalled call may leave a
 * job number unused, as docs/concurrency.md states), lease no job twice at
 * once, and lose nothing (./recovery.ts). A history with a kill, a stall or a
 * hold replays here (LEASEHOLD_SCHEDULE), with every check.
 */
import { afterAll, describe, it } from 'vitest';
import { testSeed } from '../support/helpers.js';
import { CALLS, MAX_THREADS, plansFor, stallPlan } from './plans.js';
import { ScheduledRecorder, type ScheduledBackend } from './recorder.js';
import { expectContractKept } from './recovery.js';

const HISTORIES = Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000) / 5;

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('a thread stalled past the patience, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, CALLS);
  afterAll(() => recorder.close());

  const base = testSeed(`scheduled stalls: ${backend}`);
  const plans = plansFor(backend, HISTORIES, (i) => stallPlan(base, i, backend));

  it.skipIf(plans.length === 0)(`keeps the contract in ${plans.length} scheduled histories`, async () => {
    for (const options of plans) {
      await expectContractKept(await recorder.record(options));
    }
  }, 900_000);
});
