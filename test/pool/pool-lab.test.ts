/**
 * The lab-card proofs for WorkerPool, each its own test, with real
 * piscina threads and the system clock: a failing job is tried exactly
 * maxAttempts times; the delays between attempts grow and are capped; a
 * thread killed mid-job costs nothing but a retry; concurrent polling never
 * hands one job to two threads; close() under load loses nothing.
 *
 * Handlers (test/fixtures/pool-handlers.mjs) log one JSON line per event into
 * a temp directory; every claim below is checked against the whole log.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { HANDLERS, bringUpLoops, counts, scratch, track, until } from '../support/pool-harness.js';



describe('WorkerPool lab card', { timeout: 20_000 }, () => {
  it('(1) dead-letters a job whose handler always fails after exactly maxAttempts attempts', async () => {
    const s = scratch();
    const maxAttempts = 4;
    const queue = new JobQueue(systemClock, new RetryPolicy(maxAttempts, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 2_000 }));
    await pool.start();
    const id = queue.submit('alwaysFails', s.payload());
    await pool.drain();
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: maxAttempts, lastError: `boom on attempt ${maxAttempts}` });
    expect(s.events('start', id).map((l) => l.attempt)).toEqual([1, 2, 3, 4]);
    expect(queue.deadLetters().map((v) => v.id)).toEqual([id]);
    expect(pool.stats()).toMatchObject({ dead: 1, succeeded: 0, pending: 0, running: 0 });
  });

  it('(2) waits at least the scheduled backoff between attempts, and each wait is at least the one before (exponential, capped)', async () => {
    const s = scratch();
    // Bases of 100 ms and up: idle threads re-check delayed jobs only every 50 ms (a backoff wakes
    // no one), so each observed gap is its backoff plus up to ~50 ms; steps of 100 ms or more keep
    // "each gap ≥ the one before" a property of the schedule, not of timer luck.
    const policy = new RetryPolicy(6, 100, 1_000);
    const queue = new JobQueue(systemClock, policy);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 5_000 }));
    await pool.start();
    const id = queue.submit('alwaysFails', s.payload());
    await until('the job is dead', () => queue.view(id).status === 'DEAD', 15_000, () => queue.view(id));

    const starts = s.events('start', id);
    expect(starts.map((l) => l.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    const scheduled = [1, 2, 3, 4, 5].map((attempt) => policy.backoffAfter(attempt));
    expect(scheduled).toEqual([100, 200, 400, 800, 1_000]); // doubling, then capped (1 600 → 1 000)
    const gaps = starts.slice(1).map((line, i) => line.t - starts[i]!.t);
    for (let i = 0; i < gaps.length; i++) {
      expect(gaps[i], `gap ${i + 1} of ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(scheduled[i]!);
      if (i > 0) expect(gaps[i], `gap ${i + 1} of ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(gaps[i - 1]!);
    }
    // The cap holds: the last wait is far below the uncapped 1 600 ms.
    expect(gaps[4], `gaps ${gaps.join(', ')} ms`).toBeLessThan(1_600);
  });

  it('(3) completes, on another thread, a job whose thread was killed mid-job, and counts it as a success exactly once', async () => {
    const s = scratch();
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 3, leaseMillis: 500 }));
    await pool.start();
    const id = queue.submit('crashByExit', s.payload());
    await until('the job succeeded', () => queue.view(id).status === 'SUCCEEDED', 15_000, () => queue.view(id));
    await until('the killed thread was replaced', () => pool.stats().restarts >= 1);
    // Once closed, no thread is left to run it again: a wrong second success would be in the log and the counts by now.
    await pool.close();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    const [killed, ...moreStarts] = s.events('start', id);
    const [ok, ...moreOks] = s.events('ok', id);
    expect([moreStarts, moreOks]).toEqual([[], []]);
    expect(killed!.attempt).toBe(1);
    expect(ok!.attempt).toBe(2);
    expect(ok!.threadId).not.toBe(killed!.threadId);
    expect(pool.stats()).toMatchObject({ succeeded: 1, running: 0, pending: 0, dead: 0 });
  });

  it('(4) never lets two threads polling at once claim the same job: 2000 jobs on 4 threads, all polling, each run exactly once', async () => {
    const s = scratch();
    const jobs = 2_000;
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 4, leaseMillis: 5_000 }));
    await pool.start();
    const warmUp = await bringUpLoops(queue, pool, s, 4);
    const idOf = new Map<number, string>();
    for (let n = 0; n < jobs; n++) idOf.set(n, queue.submit('noop', s.payload({ n })));
    await pool.drain();

    const oks = s.events('ok').filter((l) => !warmUp.includes(l.jobId));
    const runs = counts(oks.map((l) => l.n as number));
    const twice = [...runs].filter(([, times]) => times !== 1);
    expect(twice, 'payloads run other than exactly once').toEqual([]);
    expect(runs.size).toBe(jobs);
    for (const line of oks) expect(line.jobId).toBe(idOf.get(line.n as number));
    expect(oks.every((l) => l.attempt === 1)).toBe(true);
    expect(pool.stats()).toMatchObject({ succeeded: jobs + warmUp.length, dead: 0, pending: 0, running: 0, refused: 0, restarts: 0 });
  });

  it('(5) close() under load loses nothing: every job is SUCCEEDED or PENDING, and a second pool finishes the rest, each exactly once', async () => {
    const s = scratch();
    const jobs = 300;
    const queue = new JobQueue(systemClock, new RetryPolicy(5, 0, 0));
    const first = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 4, concurrency: 2, leaseMillis: 2_000 }));
    await first.start();
    const idOf = new Map<number, string>();
    for (let n = 0; n < jobs; n++) {
      // Half finish what they started; half stop (throw) when the signal aborts.
      idOf.set(n, queue.submit(n % 2 === 0 ? 'work' : 'cooperative', s.payload({ n, ms: 5 + (n % 11) })));
    }
    await until('some jobs succeeded', () => queue.stats().succeeded >= 60);
    expect(queue.stats().running).toBeGreaterThan(0);
    await first.close();

    const afterClose = queue.stats();
    expect(afterClose).toMatchObject({ running: 0, dead: 0, cancelled: 0 });
    expect(afterClose.succeeded + afterClose.pending).toBe(jobs);
    const okAfterClose = counts(s.events('ok').map((l) => l.n as number));
    for (const [n, id] of idOf) {
      const status = queue.view(id).status;
      expect(['SUCCEEDED', 'PENDING'], `${id} after close`).toContain(status);
      expect(okAfterClose.get(n) ?? 0, `successes logged for ${id} (${status})`).toBe(status === 'SUCCEEDED' ? 1 : 0);
    }

    const second = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, concurrency: 2, leaseMillis: 2_000 }));
    await second.start();
    await second.drain();
    expect(queue.stats()).toMatchObject({ succeeded: jobs, pending: 0, running: 0, dead: 0 });
    const oks = s.events('ok');
    const runs = counts(oks.map((l) => l.n as number));
    expect([...runs].filter(([, times]) => times !== 1), 'jobs that succeeded other than exactly once').toEqual([]);
    expect(runs.size).toBe(jobs);
    for (const line of oks) expect(line.jobId).toBe(idOf.get(line.n as number));
  });
});
