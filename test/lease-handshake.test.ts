/**
 * The lease handshake (WorkerPath#registerLease, Maintenance#publishDue): a
 * worker registers each lease in its own row's ring, lock-free, while the
 * maintenance holder drains the rings and publishes NEXT_DUE, the time the
 * next lease expires; calls before NEXT_DUE skip maintenance. A lease
 * registered while the holder recomputes NEXT_DUE must never be missed: at
 * its leaseUntil, every call sees it expired. Round after round, real threads
 * lease jobs (leases of random length) at the instant another thread's
 * maintenance pass publishes NEXT_DUE; then the clock moves to the earliest
 * lease end and a view — lock-free whenever NEXT_DUE says nothing is due —
 * must show each ended lease expired.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../dist/index.js';
import { startWorker, terminateAll, testSeed, withTimeout } from './helpers.js';

const START = 1_767_225_600_000;

describe('lease handshake', () => {
  it('never misses a lease registered while the maintenance holder publishes when maintenance is next due', async () => {
    const seed = testSeed('lease-handshake');
    const clock = new ManualClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(5, 0, 0), { capacity: 50_000 });
    const PARTIES = 3;
    const ROUNDS = 3_000;
    const controlBuffer = new SharedArrayBuffer(8);
    const leaseBuffer = new SharedArrayBuffer(PARTIES * 2 * 8);
    const handle = queue.share();
    const workers = await Promise.all(
      Array.from({ length: PARTIES }, (_, index) =>
        startWorker('handshake-worker.mjs', {
          handle, clockBuffer: clock.buffer, index, parties: PARTIES, rounds: ROUNDS, seed: seed + index, controlBuffer, leaseBuffer,
        }),
      ),
    );
    let reports: { missed: string[] }[];
    try {
      reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 50_000, 'handshake rounds')) as { missed: string[] }[];
    } finally {
      await terminateAll(workers);
    }
    expect(reports.flatMap((r) => r.missed).slice(0, 20)).toEqual([]);
    // Every lease expired (retried, or dead after 5 attempts): nothing was lost or left running.
    const stats = queue.stats();
    expect(stats).toMatchObject({ running: 0, succeeded: 0 });
    expect(stats.pending + stats.dead).toBe(ROUNDS * PARTIES);
    queue.close();
  }, 60_000);
});
