/**
 * Binary payloads across real threads: two threads submit binary jobs (the
 * arena growing under them) while two others lease them from the same
 * shared queue, check every byte, and complete each with a binary result.
 * Every job is seen once, with its own bytes; every result is kept.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
// @ts-expect-error: a plain ES module fixture, shared with the threads
import { bytesFor } from '../fixtures/binary-thread-lib.mjs';

const expectedBytes = bytesFor as (thread: number, i: number) => Uint8Array;
const JOBS = 150;

describe('binary payloads across threads', () => {
  it('hands every binary job to one consumer with its own bytes while others submit, and keeps each binary result', async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    const handle = queue.share();
    const countsBuffer = new SharedArrayBuffer(8);
    const total = 2 * JOBS;
    const workers: RunningWorker[] = [];
    try {
      for (const [role, index] of [['consume', 0], ['consume', 1], ['submit', 1], ['submit', 2]] as const) {
        workers.push(await startWorker('binary-thread.mjs', { handle, role, index, jobs: JOBS, total, countsBuffer }));
      }
      await withTimeout(Promise.all(workers.map((w) => w.result)), 120_000, 'the threads');
    } finally {
      await terminateAll(workers);
    }
    const counts = new Int32Array(countsBuffer);
    expect({ completed: counts[0], mismatched: counts[1] }).toEqual({ completed: total, mismatched: 0 });
    expect(queue.stats().succeeded).toBe(total);
    for (let n = 1; n <= total; n++) {
      const view = queue.view(`J${n}`);
      const payload = view.payload as Uint8Array;
      expect(Buffer.from(payload).equals(expectedBytes(payload[0]!, payload[1]! | (payload[2]! << 8)))).toBe(true);
      expect(view.result).toEqual(Uint8Array.from(payload.subarray(0, 8)).reverse());
    }
  });
});
