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

/** A clock that moves on by itself: each reading `step` ms after the last; `throwOn(n)` makes the n-th reading from then on throw. */
class DriftingClock {
  reading: number;
  readonly step: number;
  #throwAt = -1;
  #reads = 0;

  constructor(start: number, step: number) {
    this.reading = start - step;
    this.step = step;
  }

  now(): number {
    this.#reads++;
    if (this.#reads === this.#throwAt) throw new Error('clock broke');
    this.reading += this.step;
    return this.reading;
  }

  throwOn(nth: number): void {
    this.#throwAt = this.#reads + nth;
  }
}

/** A queue on a DriftingClock of `step` ms, with one job submitted and leased for 100 ms. */
function leasedJob(step: number) {
  const clock = new DriftingClock(START, step);
  const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
  const id = queue.submit('t', 'p');
  const lease = queue.poll('w', 100)!;
  expect(lease.jobId).toBe(id);
  return { clock, queue, lease };
}

describe('a clock that moves during a claim', () => {
  it("stamps a poll's lease from the last clock reading of the call, taken once the claim holds its slot", () => {
    const { clock, queue, lease } = leasedJob(7);
    expect(lease.leaseUntil).toBe(clock.reading + 100);
    expect(queue.view(lease.jobId)).toMatchObject({ status: 'RUNNING', leaseUntil: lease.leaseUntil });
    queue.close();
  });

  it('stamps an extend from its last reading while the old lease still runs then', () => {
    const { clock, queue, lease } = leasedJob(7);
    const until = queue.extend(lease.jobId, lease.token, 50);
    expect(until).toBe(clock.reading + 50);
    expect(queue.view(lease.jobId)).toMatchObject({ status: 'RUNNING', leaseUntil: until });
    queue.close();
  });

  it('keeps the end from the first reading when the old lease has run out by the second (the extend came first)', () => {
    // Each reading 60 ms after the last: the extend's second reading is past the old lease's end.
    const { clock, queue, lease } = leasedJob(60);
    const before = clock.reading;
    const until = queue.extend(lease.jobId, lease.token, 500);
    expect(until).toBe(before + 60 + 500);
    queue.close();
  });

  it('keeps the first reading when the clock throws while the claim holds its slot, and leaves the job leased, not stuck', () => {
    // After a first job, the next poll is the lock-free one (its row holds tokens): one reading before the claim, one while it holds the slot.
    const { clock, queue, lease: first } = leasedJob(7);
    queue.complete(first.jobId, first.token);
    const id = queue.submit('t', 'p');
    clock.throwOn(2);
    const lease = queue.poll('w', 100)!;
    expect(lease.jobId).toBe(id);
    expect(lease.leaseUntil).toBe(clock.reading + 100);
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: lease.leaseUntil, attempts: 1 });
    queue.complete(id, lease.token);
    expect(queue.view(id).status).toBe('SUCCEEDED');
    queue.close();
  });
});
