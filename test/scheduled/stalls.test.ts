/**
 * A thread stalled past the queue's patience at a random step of a
 * scheduled history: presumed dead, its lock taken over or its call helped
 * through, it wakes later, finds it so and goes on. Nothing may be lost or
 * completed twice (./recovery.ts). A stalled live thread is the residual
 * risk docs/concurrency.md states: its claim may be finished for it, or its
 * poll may return a lease that a takeover already gave back, so that another
 * thread leases the same attempt (found: 1 history in 200); the fencing token
 * then refuses the stalled one's complete. So neither the checker's ordering
 * rules nor `doubleLeases` are asked of these histories, only that no job is
 * lost or finished twice.
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
      await expectRecovered(await recorder.record(options), replayCommand(options), { leases: 'fenced' });
    }
  }, 900_000);
});
