/**
 * A lease's binary payload is a view onto the queue's shared memory, not a
 * copy, and stays the job's bytes while the lease is live (I29 in
 * src/shm/README.md), with real threads: one thread holds a lease of a
 * 64 KiB job and compares its view again and again while another thread
 * submits, leases and completes hundreds of jobs of mixed sizes in a 1 MiB
 * arena, so that finished jobs are evicted and their chunks reused all
 * around it. The churn starts only once the job is held (a handshake).
 * And the rule's other half, in one thread: once the lease is over the job
 * may be evicted, and a `slice()` taken before is the holder's for good.
 */
import { describe, expect, it } from 'vitest';
import { JobNotFoundError, JobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
import {
  CHURN_DONE, CHURN_MISMATCHED, HELD_CHECKS, HELD_MISMATCHED, HELD_SEED, HELD_SHARED, SIGNAL_WORDS, churnLength, patternFor, sameBytes,
  // @ts-expect-error: a plain ES module fixture, shared with the threads
} from '../fixtures/binary-view-lib.mjs';

const HELD_BYTES = 64 * 1024;
const CHURN_JOBS = 400;

describe('binary payload views across threads', () => {
  it("keeps a held lease's view of its payload intact while jobs around it are submitted, evicted and reused", async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { arenaBytes: 1 << 20, maxPayloadBytes: 192 * 1024 });
    const held = queue.submit('held', patternFor(HELD_SEED, HELD_BYTES));
    const handle = queue.share();
    const signalsBuffer = new SharedArrayBuffer(SIGNAL_WORDS * 4);
    const workers: RunningWorker[] = [];
    try {
      for (const role of ['hold', 'churn']) {
        workers.push(await startWorker('binary-view-thread.mjs', { handle, role, heldBytes: HELD_BYTES, jobs: CHURN_JOBS, signalsBuffer }));
      }
      await withTimeout(Promise.all(workers.map((w) => w.result)), 120_000, 'the threads');
    } finally {
      await terminateAll(workers);
    }
    const signals = new Int32Array(signalsBuffer);
    expect({
      shared: signals[HELD_SHARED], heldMismatched: signals[HELD_MISMATCHED], churned: signals[CHURN_DONE], churnMismatched: signals[CHURN_MISMATCHED],
    }).toEqual({ shared: 1, heldMismatched: 0, churned: CHURN_JOBS, churnMismatched: 0 });
    expect(signals[HELD_CHECKS]).toBeGreaterThan(1);
    // The churn did go round the arena: far more bytes than it holds, the first churn jobs evicted.
    const churnBytes = Array.from({ length: CHURN_JOBS }, (_, i) => churnLength(i) as number).reduce((a, b) => a + b, 0);
    expect(churnBytes).toBeGreaterThan(20 * (1 << 20));
    expect(() => queue.view('J2')).toThrow(JobNotFoundError);
    const view = queue.view(held);
    expect(view.status).toBe('SUCCEEDED');
    // A view of the job is a copy of its own, not the arena's memory.
    expect((view.payload as Uint8Array).buffer).not.toBeInstanceOf(SharedArrayBuffer);
    expect(sameBytes(view.payload, patternFor(HELD_SEED, HELD_BYTES))).toBe(true);
  });

  it("shows the job's bytes until its lease ends; a slice() taken before then keeps them after the job is evicted and its memory reused", () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { arenaBytes: 1 << 20, maxPayloadBytes: 192 * 1024 });
    const id = queue.submit('held', patternFor(HELD_SEED, HELD_BYTES));
    const lease = queue.poll('w', 60_000)!;
    const view = lease.payload as Uint8Array;
    expect(view.buffer).toBeInstanceOf(SharedArrayBuffer);
    const kept = view.slice();
    expect(kept.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    queue.complete(lease.jobId, lease.token, null);
    // Jobs of the same size through the small arena until the first is evicted (I29: its chunks are free to reuse).
    let churned = 0;
    for (; churned < 200 && isKept(queue, id); churned++) {
      queue.submit('churn', patternFor(churned + 1, HELD_BYTES));
      const other = queue.poll('w', 60_000)!;
      queue.complete(other.jobId, other.token, null);
    }
    expect(isKept(queue, id)).toBe(false);
    expect(sameBytes(kept, patternFor(HELD_SEED, HELD_BYTES))).toBe(true);
  });
});

/** Whether the job is still in memory (not evicted). */
function isKept(queue: JobQueue, id: string): boolean {
  try {
    queue.view(id);
    return true;
  } catch (error) {
    if (error instanceof JobNotFoundError) return false;
    throw error;
  }
}
