/**
 * Payloads written in place (I30) with real threads: producers reserve,
 * write and submit (or release) payloads while consumers poll and complete
 * them in a small arena, so that finished jobs are evicted and runs reused
 * all around the reservations in flight; every byte of every job is checked.
 * A thread that exits with reservations it never submitted loses them once
 * `threadExited` is told, and their chunks are free again. And a WorkerPool's
 * handlers read the bytes where the producer wrote them.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { QueueMemory } from '../../dist/testing/core-internals.js';
import { startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
// @ts-expect-error: a plain ES module fixture, shared with the threads
import { CONSUMED, MISMATCHED, SIGNAL_WORDS, SUBMITTED, lengthOf } from '../fixtures/reserve-bytes-lib.mjs';

const PRODUCERS = 3;
const CONSUMERS = 2;
const JOBS = 60;

/** Jobs a producer submits of its JOBS (the fixture's rule: every seventh step is released, a pair at a time from i % 5 === 3). */
function submittedBy(jobs: number): number {
  let submitted = 0;
  for (let i = 0; i < jobs; ) {
    const size = i % 5 === 3 && i + 1 < jobs ? 2 : 1;
    if (i % 7 !== 6) submitted += size;
    i += size;
  }
  return submitted;
}

describe('payloads written in place across threads', () => {
  it('gives every job the bytes its producer wrote, while others reserve, submit, release, poll and complete', async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { arenaBytes: 4 << 20, maxPayloadBytes: 256 * 1024 });
    const handle = queue.share();
    const memory = new QueueMemory(handle.buffers, 500);
    const signalsBuffer = new SharedArrayBuffer(SIGNAL_WORDS * 4);
    const workers: RunningWorker[] = [];
    try {
      for (let producer = 0; producer < PRODUCERS; producer++) {
        workers.push(await startWorker('reserve-bytes-thread.mjs', { handle, role: 'producer', producer, jobs: JOBS, producers: PRODUCERS, signalsBuffer }));
      }
      for (let consumer = 0; consumer < CONSUMERS; consumer++) {
        workers.push(await startWorker('reserve-bytes-thread.mjs', { handle, role: 'consumer', jobs: JOBS, producers: PRODUCERS, signalsBuffer }));
      }
      await withTimeout(Promise.all(workers.map((w) => w.result)), 240_000, 'the threads');
    } finally {
      await terminateAll(workers);
    }
    const signals = new Int32Array(signalsBuffer);
    const expected = PRODUCERS * submittedBy(JOBS);
    expect({ submitted: signals[SUBMITTED], consumed: signals[CONSUMED], mismatched: signals[MISMATCHED] }).toEqual({ submitted: expected, consumed: expected, mismatched: 0 });
    // The arena went round: far more bytes than it holds went through it.
    const bytes = Array.from({ length: PRODUCERS * JOBS }, (_, i) => lengthOf(Math.floor(i / JOBS), i % JOBS) as number).reduce((a, b) => a + b, 0);
    expect(bytes).toBeGreaterThan(3 * (4 << 20));
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0 });
    expect(memory.reservations.live, 'reservations left').toBe(0);
  });

  it("frees the reservations of a thread that exited without submitting them, once threadExited is told", async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { maxPayloadBytes: 256 * 1024 });
    const handle = queue.share();
    const memory = new QueueMemory(handle.buffers, 500);
    const before = memory.arena.freeChunks;
    const worker = await startWorker('reserve-bytes-thread.mjs', { handle, role: 'abandon', producer: 9, jobs: 4, signalsBuffer: new SharedArrayBuffer(SIGNAL_WORDS * 4) });
    const threadId = worker.worker.threadId;
    const reserved = (await withTimeout(worker.result, 60_000, 'the thread')) as number;
    await worker.exited;
    expect(reserved).toBeGreaterThan(4 * 4096);
    expect(before - memory.arena.freeChunks, 'chunks the dead thread holds').toBeGreaterThanOrEqual(Math.ceil(reserved / 64));
    expect(memory.reservations.live).toBe(4);
    queue.threadExited(threadId);
    expect(memory.reservations.live).toBe(0);
    expect(memory.arena.freeChunks).toBe(before);
  });

  it("hands a WorkerPool's handlers the bytes where the producer wrote them", async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    const pool = new WorkerPool(queue, { handlers: new URL('../fixtures/reserve-bytes-handlers.mjs', import.meta.url), threads: 2 });
    await pool.start();
    try {
      const results = await Promise.all(Array.from({ length: 24 }, (_, i) => {
        const bytes = queue.reserveBytes(64 * 1024 + i);
        bytes.fill(i + 1);
        return i % 2 === 0 ? pool.run('checksum', bytes) : queue.finished(queue.submit('checksum', bytes));
      }));
      expect(results).toEqual(Array.from({ length: 24 }, (_, i) => ({ shared: true, length: 64 * 1024 + i, sum: (64 * 1024 + i) * (i + 1) })));
    } finally {
      await pool.close();
    }
  });
});
