/**
 * The WorkerPool lab-card proofs on a JOURNALED queue:
 * the pool's threads attach to the queue and journal their own state changes
 * through their own connections. Each proof runs as in pool-lab.test.ts, then
 * the pool and the journal are closed, the journal is reopened in the test
 * process, and every job's state must have survived.
 *
 * Handlers: test/fixtures/pool-handlers.mjs, through test/support/pool-harness.ts, and
 * test/fixtures/journal-handlers.mjs.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { HANDLERS, bringUpLoops, counts, scratch, track, until } from '../support/pool-harness.js';
import { closeJournal, openJournal as openTracked, tempJournal } from '../support/journal-harness.js';

function openJournal(path: string, policy: RetryPolicy): JobQueue {
  return openTracked(path, systemClock, policy);
}

/** Handlers of this file's own (test/fixtures/journal-handlers.mjs). */
const JOURNAL_HANDLERS = new URL('../fixtures/journal-handlers.mjs', import.meta.url);

function journaledPool(queue: JobQueue, options: Omit<ConstructorParameters<typeof WorkerPool>[1], 'handlers'> & { handlers?: URL }): WorkerPool {
  // Tracked: closed after the test whatever happens.
  return track(new WorkerPool(queue, { handlers: HANDLERS, ...options }));
}

/** Closes the pool, then the journal, and opens the journal again in this thread. */
async function closeAndReopen(pool: WorkerPool, queue: JobQueue, path: string, policy: RetryPolicy): Promise<JobQueue> {
  await pool.close();
  closeJournal(queue);
  return openJournal(path, policy);
}



describe('WorkerPool lab card on a journaled queue', { timeout: 30_000 }, () => {
  it('(1) dead-letters an always-failing job after exactly maxAttempts attempts, and it is still DEAD after a reopen', async () => {
    const s = scratch();
    const path = tempJournal();
    const maxAttempts = 4;
    const policy = new RetryPolicy(maxAttempts, 0, 0);
    const queue = openJournal(path, policy);
    const pool = journaledPool(queue, { threads: 2, leaseMillis: 2_000 });
    await pool.start();
    const id = queue.submit('alwaysFails', s.payload());
    await pool.drain();
    const dead = { status: 'DEAD', attempts: maxAttempts, lastError: `boom on attempt ${maxAttempts}` };
    expect(queue.view(id)).toMatchObject(dead);
    expect(s.events('start', id).map((l) => l.attempt)).toEqual([1, 2, 3, 4]);

    const reopened = await closeAndReopen(pool, queue, path, policy);
    expect(reopened.view(id)).toMatchObject({ ...dead, type: 'alwaysFails', payload: s.payload() });
    expect(reopened.deadLetters().map((v) => v.id)).toEqual([id]);
    expect(reopened.stats()).toMatchObject({ dead: 1, succeeded: 0, pending: 0, running: 0 });
  });

  it('(3) completes once, on another thread, a job whose thread was killed mid-job; the success survives a reopen', async () => {
    const s = scratch();
    const path = tempJournal();
    const policy = new RetryPolicy(3, 0, 0);
    const queue = openJournal(path, policy);
    const pool = journaledPool(queue, { threads: 3, leaseMillis: 500 });
    await pool.start();
    const id = queue.submit('crashByExit', s.payload());
    await until('the job succeeded', () => queue.view(id).status === 'SUCCEEDED', 15_000, () => queue.view(id));
    await until('the killed thread was replaced', () => pool.stats().restarts >= 1);
    // Once closed, no thread is left to run it again: a wrong second success would be in the log by now.
    await pool.close();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    const [killed, ...moreStarts] = s.events('start', id);
    const [ok, ...moreOks] = s.events('ok', id);
    expect([moreStarts, moreOks]).toEqual([[], []]);
    expect(killed!.attempt).toBe(1);
    expect(ok!.attempt).toBe(2);
    expect(ok!.threadId).not.toBe(killed!.threadId);
    const before = { ...queue.view(id) };

    const reopened = await closeAndReopen(pool, queue, path, policy);
    expect(reopened.view(id)).toMatchObject({
      status: 'SUCCEEDED', attempts: 2, lastError: before.lastError, type: 'crashByExit', payload: s.payload(),
    });
    expect(reopened.stats()).toMatchObject({ succeeded: 1, running: 0, pending: 0, dead: 0 });
  });

  it('(4) runs each of 500 jobs exactly once on 2 threads, both polling, and all 500 are SUCCEEDED after a reopen', async () => {
    const s = scratch();
    const path = tempJournal();
    const jobs = 500;
    const policy = new RetryPolicy(1, 0, 0);
    const queue = openJournal(path, policy);
    const pool = journaledPool(queue, { threads: 2, leaseMillis: 5_000 });
    await pool.start();
    const warmUp = await bringUpLoops(queue, pool, s, 2);

    const idOf = new Map<number, string>();
    for (let n = 0; n < jobs; n++) idOf.set(n, queue.submit('noop', s.payload({ n })));
    await pool.drain();

    const oks = s.events('ok').filter((l) => !warmUp.includes(l.jobId));
    const runs = counts(oks.map((l) => l.n as number));
    expect([...runs].filter(([, times]) => times !== 1), 'payloads run other than exactly once').toEqual([]);
    expect(runs.size).toBe(jobs);
    for (const line of oks) expect(line.jobId).toBe(idOf.get(line.n as number));
    expect(oks.every((l) => l.attempt === 1)).toBe(true);
    const all = jobs + warmUp.length;
    expect(queue.stats()).toMatchObject({ succeeded: all, dead: 0, pending: 0, running: 0 });

    const reopened = await closeAndReopen(pool, queue, path, policy);
    expect(reopened.stats()).toEqual({ pending: 0, ready: 0, delayed: 0, running: 0, succeeded: all, dead: 0, cancelled: 0, paused: false });
    const wrong = [...idOf].filter(([n, id]) => {
      const view = reopened.view(id);
      return view.status !== 'SUCCEEDED' || view.attempts !== 1 || view.payload !== s.payload({ n });
    });
    expect(wrong, 'jobs not SUCCEEDED once with their payload after the reopen').toEqual([]);
    expect(reopened.submit('noop', s.payload({ n: jobs }))).toBe(`J${all + 1}`);
  });

  it('keeps a completion journaled by a thread that dies a moment later: SUCCEEDED stays SUCCEEDED after a clean close and reopen', async () => {
    const path = tempJournal();
    const policy = new RetryPolicy(1, 0, 0);
    const queue = openJournal(path, policy);
    // One thread: it completes `done`, then polls `crasher`, whose handler exits the thread at once.
    const done = queue.submit('done', '', 10);
    const crasher = queue.submit('exitAtOnce', '', 0);
    const pool = journaledPool(queue, { handlers: JOURNAL_HANDLERS, threads: 1, leaseMillis: 2_000 });
    await pool.start();
    await until('the crasher is dead-lettered', () => queue.view(crasher).status === 'DEAD', 15_000, () => queue.view(crasher));
    expect(queue.view(done)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });

    const reopened = await closeAndReopen(pool, queue, path, policy);
    expect(reopened.view(done), 'the job the dead thread completed').toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
    expect(reopened.view(crasher)).toMatchObject({ status: 'DEAD', attempts: 1 });
  });
});
