/**
 * A thread stalled past the queue's patience at a random step of a
 * scheduled history: presumed dead, its lock taken over or its call helped
 * through, it wakes later, finds it so and goes on. Nothing may be lost or
 * leased twice (./recovery.ts). A stalled live thread is the residual risk
 * docs/concurrency.md states: a claim it had decided before the takeover is
 * finished for it by the helper, so the checker's ordering rules are not
 * asked of these histories.
 */
import { afterAll, describe, it } from 'vitest';
import { testSeed } from '../helpers.js';
import { CALLS, MAX_THREADS, stallPlan } from './plans.js';
import { ScheduledRecorder, replayCommand, type ScheduledBackend } from './recorder.js';
import { expectRecovered } from './recovery.js';

const HISTORIES = Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000) / 5;

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('a thread stalled past the patience, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, CALLS);
  afterAll(() => recorder.close());

  it(`loses nothing and leases nothing twice in ${HISTORIES} scheduled histories`, async () => {
    const base = testSeed(`scheduled stalls: ${backend}`);
    for (let i = 0; i < HISTORIES; i++) {
      const options = stallPlan(base, i, backend);
      await expectRecovered(await recorder.record(options), replayCommand(options));
    }
  }, 900_000);
});
