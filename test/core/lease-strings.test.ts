/**
 * A lease shows its own job's type and payload even when, between the poll's
 * claim and its return, the job is cancelled, evicted and its chunks reused
 * by another job: the strings are read before the claim's CAS, which proves
 * them whole (Records#readLeaseStrings; I4, I29). The interleaving is made
 * in one thread, with a second handle on the shared queue, at the documented
 * seam `beforeLockFreeCallsLeave`.
 */
import { describe, expect, it } from 'vitest';
import { JobNotFoundError, JobQueue, ManualClock, RetryPolicy, type Lease } from '../../dist/index.js';
import { beforeLockFreeCallsLeave } from '../../dist/testing/core-internals.js';

const LEASE_MILLIS = 30_000;

/** A payload of `length` characters of `letter`: several chunks, so that a reuse overwrites what the lease would read. */
function text(letter: string, length = 300): string {
  return letter.repeat(length);
}

describe('a lease whose job is cancelled and evicted before its poll returns', () => {
  it.each([
    { kind: 'text', payload: text('a'), others: [text('x'), text('y')] },
    // Bytes short of a run: a chain, which the lease copies out. (A run's view is onto the chunks themselves: a
    // cancelled lease's view may show other bytes, as I29 says of every lease once it has ended.)
    { kind: 'bytes', payload: new Uint8Array(300).fill(7), others: [new Uint8Array(300).fill(8), new Uint8Array(300).fill(9)] },
  ])('shows the job it leased ($kind payload), not the one that reused its chunks', ({ payload, others }) => {
    const clock = new ManualClock(1_000_000);
    const queue = new JobQueue(clock, new RetryPolicy(1, 0, 0), { capacity: 2 });
    const other = JobQueue.attach(queue.share());
    try {
      // A first lease and complete: the worker's name is known, so the next poll is lock-free.
      queue.submit('warm', 'w');
      const warm = queue.poll('w', LEASE_MILLIS)!;
      queue.complete(warm.jobId, warm.token);
      const jobId = queue.submit('email', payload);
      let interfered = false;
      const lease: Lease | undefined = beforeLockFreeCallsLeave(() => {
        if (interfered || other.view(jobId)?.status !== 'RUNNING') return;
        interfered = true;
        // The claim is made; before the poll reads on: its job cancelled, then two submits at capacity evict
        // the warm-up job and the cancelled one, and take their chunks.
        other.cancel(jobId);
        for (const bytes of others) other.submit('resize', bytes);
      }, () => queue.poll('w', LEASE_MILLIS));
      expect(interfered, 'the job was cancelled and evicted inside the poll').toBe(true);
      expect(() => other.view(jobId), 'the leased job was evicted').toThrow(JobNotFoundError);
      expect(lease?.jobId).toBe(jobId);
      expect(lease?.type).toBe('email');
      expect(lease?.payload).toEqual(payload);
    } finally {
      other.close();
      queue.close();
    }
  });
});
