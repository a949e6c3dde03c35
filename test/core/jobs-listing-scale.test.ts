import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { slotReadsDuring } from '../../dist/testing/core-internals.js';
import { T0 } from '../support/helpers.js';

const SUCCEEDED = 100_000;
const DEAD = 3;
/** Slot reads a DEAD page may cost: a few per job listed and per tree level, far below one per slot. */
const FEW_READS = 500;

describe('jobs() at scale', () => {
  it(`lists ${DEAD} DEAD jobs among ${SUCCEEDED} SUCCEEDED reading a few slots, where a scan reads them all`, () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0), { capacity: SUCCEEDED + DEAD });
    try {
      // Built while the queue is empty: from here on the moves keep it (the lock-free completes through the ring drains).
      expect(queue.jobs()).toEqual({ jobs: [], next: null });
      queue.submitMany(Array.from({ length: SUCCEEDED / 2 }, () => ({ type: 'bulk' })));
      const dead = [queue.submit('poison')];
      queue.submitMany(Array.from({ length: SUCCEEDED / 2 }, () => ({ type: 'bulk' })));
      dead.push(...queue.submitMany(Array.from({ length: DEAD - 1 }, () => ({ type: 'poison' }))));
      for (let lease = queue.poll('w', 60_000); lease !== undefined; lease = queue.poll('w', 60_000)) {
        if (lease.type === 'poison') queue.fail(lease.jobId, lease.token, 'poison', { permanent: true });
        else queue.complete(lease.jobId, lease.token);
      }
      expect([queue.stats().succeeded, queue.stats().dead]).toEqual([SUCCEEDED, DEAD]);
      // The ring entries of the last completes are filed by this call, outside the count.
      expect(queue.jobs({ status: 'DEAD' }).jobs.map((job) => job.id)).toEqual(dead);

      let page = queue.jobs();
      const reads = slotReadsDuring(() => (page = queue.jobs({ status: 'DEAD' })));
      expect(page.jobs.map((job) => job.id)).toEqual(dead);
      expect(page.next).toBeNull();
      expect(reads).toBeLessThan(FEW_READS);
      // The same count catches a scan: deadLetters reads every slot.
      expect(slotReadsDuring(() => queue.deadLetters())).toBeGreaterThan(SUCCEEDED);
      // A page deep into the SUCCEEDED jobs costs as little.
      const deep = queue.jobs({ status: 'SUCCEEDED', limit: 1, after: queue.jobs({ status: 'SUCCEEDED', limit: 1 }).next! });
      expect(slotReadsDuring(() => queue.jobs({ status: 'SUCCEEDED', limit: 10, after: deep.next! }))).toBeLessThan(FEW_READS);
    } finally {
      queue.close();
    }
  });
});
