/**
 * The lease handshake (WorkerPath#registerLease, Filing#publishDue): a
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
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { ATTENTION, DUE_LOWERED } from '../../dist/testing/core-internals.js';
import { startWorker, terminateAll, testSeed, withTimeout } from '../support/helpers.js';

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
  step: number;
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

/**
 * A queue on a DriftingClock of 7 ms steps with one job submitted, shared
 * (other threads may attach: its claims order themselves against theirs).
 * After a first job through, this instance's row holds tokens, so `poll`
 * here is the lock-free one: it reads the clock once before it looks for a
 * job and once just before its claim. A view after it registers the lease
 * for expiry, so that an extend next is lock-free too. `exclusive`: never
 * shared, a queue no other thread can reach.
 */
function leasedJob({ exclusive = false } = {}) {
  const clock = new DriftingClock(START, 7);
  const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
  if (!exclusive) queue.share();
  queue.submit('t', 'warm-up');
  const warm = queue.poll('w', 100)!;
  queue.complete(warm.jobId, warm.token);
  const id = queue.submit('t', 'p');
  const poll = () => {
    const lease = queue.poll('w', 100)!;
    queue.view(lease.jobId);
    return lease;
  };
  return { clock, queue, id, poll };
}

describe('a clock that moves during a claim', () => {
  it("stamps a poll's lease from its second clock reading, taken just before the claim's decision", () => {
    const { clock, queue, id, poll } = leasedJob();
    const before = clock.reading;
    const lease = poll();
    expect(lease.jobId).toBe(id);
    expect(lease.leaseUntil).toBe(before + 2 * 7 + 100);
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: lease.leaseUntil });
    queue.close();
  });

  it('stamps an extend from its second reading while the old lease still runs then', () => {
    const { clock, queue, poll } = leasedJob();
    const lease = poll();
    const before = clock.reading;
    const until = queue.extend(lease.jobId, lease.token, 50);
    expect(until).toBe(before + 2 * 7 + 50);
    expect(queue.view(lease.jobId)).toMatchObject({ status: 'RUNNING', leaseUntil: until });
    queue.close();
  });

  // Lock-free, it kept the end from its first reading, and a catch-up that had let the old lease go as the extend
  // moved the job could then miss the new one: a poll passed over the job, expired, for a worse one (history checker).
  it('takes the lock for an extend whose old lease has run out by its second reading, and is refused there as expired', () => {
    const { clock, queue, poll } = leasedJob();
    const lease = poll();
    // 60 ms a reading from here: the extend's first reading is within the old lease, its second past its end.
    clock.step = 60;
    const before = clock.reading;
    expect(before + 60).toBeLessThan(lease.leaseUntil);
    expect(before + 120).toBeGreaterThanOrEqual(lease.leaseUntil);
    expect(() => queue.extend(lease.jobId, lease.token, 500)).toThrow(expect.objectContaining({ code: 'ERR_STALE_LEASE' }));
    expect(queue.view(lease.jobId)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired' });
    queue.close();
  });

  it('keeps the first reading when the clock throws just before the claim, and leaves the job leased, not stuck', () => {
    const { clock, queue, id, poll } = leasedJob();
    const before = clock.reading;
    clock.throwOn(2);
    const lease = poll();
    expect(lease.jobId).toBe(id);
    expect(lease.leaseUntil).toBe(before + 7 + 100);
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: lease.leaseUntil, attempts: 1 });
    queue.complete(id, lease.token);
    expect(queue.view(id).status).toBe('SUCCEEDED');
    queue.close();
  });
});

describe('a clock that moves during a call of an exclusive queue (never shared)', () => {
  it("stamps a poll's lease from the one reading the poll took: no other thread's claim to order it against", () => {
    const { clock, queue, id, poll } = leasedJob({ exclusive: true });
    const before = clock.reading;
    const lease = poll();
    expect(lease.jobId).toBe(id);
    expect(lease.leaseUntil).toBe(before + 7 + 100);
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', leaseUntil: lease.leaseUntil });
    queue.close();
  });

  it('stamps an extend from its one reading', () => {
    const { clock, queue, poll } = leasedJob({ exclusive: true });
    const lease = poll();
    const before = clock.reading;
    expect(queue.extend(lease.jobId, lease.token, 50)).toBe(before + 7 + 50);
    queue.close();
  });

  it('gives a submit without runAt the one reading it took as runAt', () => {
    const { clock, queue } = leasedJob({ exclusive: true });
    const before = clock.reading;
    const id = queue.submit('t', 'later');
    expect(queue.view(id).nextRunAt).toBe(before + 7);
    queue.close();
  });

  it('takes the second readings again once shared', () => {
    const { clock, queue, id, poll } = leasedJob({ exclusive: true });
    queue.share();
    const before = clock.reading;
    const lease = poll();
    expect(lease.jobId).toBe(id);
    expect(lease.leaseUntil).toBe(before + 2 * 7 + 100);
    queue.close();
  });
});

/**
 * When a maintenance pass finds nothing due, NEXT_DUE is published a second
 * after its time, not Infinity: a lease that ends later than that then
 * raises no DUE_LOWERED, which would send every thread's next call to the
 * lock (the 2-thread drains of bench "work" met it hundreds of times per
 * 50,000 jobs: jobs done as fast as they are leased leave no valid lease as
 * a holder publishes). The lease must still expire at its end.
 */
describe('NEXT_DUE with nothing due', () => {
  function afterEmptyPass(leaseMillis: number) {
    const clock = new ManualClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    const lockWords = new Int32Array(queue.share().buffers.lockWords);
    // The warm-up gives this instance's row its tokens; the submit after it is a locked pass with no lease valid.
    queue.submit('t', 'warm-up');
    const warm = queue.poll('w', leaseMillis)!;
    queue.complete(warm.jobId, warm.token);
    const id = queue.submit('t', 'p');
    Atomics.and(lockWords, ATTENTION, ~DUE_LOWERED);
    const lease = queue.poll('w', leaseMillis)!;
    expect(lease.jobId).toBe(id);
    return { clock, queue, lease, lowered: (Atomics.load(lockWords, ATTENTION) & DUE_LOWERED) !== 0 };
  }

  it('lets a lease that ends after it stay lock-free: no DUE_LOWERED, and the lease still expires at its end', () => {
    const { clock, queue, lease, lowered } = afterEmptyPass(30_000);
    expect(lowered).toBe(false);
    clock.advance(29_999);
    expect(queue.view(lease.jobId)).toMatchObject({ status: 'RUNNING', attempts: 1 });
    clock.advance(1);
    expect(queue.view(lease.jobId)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired' });
    queue.close();
  });

  it('still has a lease that ends before it raise DUE_LOWERED, and expire at its end', () => {
    const { clock, queue, lease, lowered } = afterEmptyPass(200);
    expect(lowered).toBe(true);
    clock.advance(199);
    expect(queue.view(lease.jobId).status).toBe('RUNNING');
    clock.advance(1);
    expect(queue.view(lease.jobId)).toMatchObject({ status: 'PENDING', lastError: 'lease expired' });
    queue.close();
  });
});
