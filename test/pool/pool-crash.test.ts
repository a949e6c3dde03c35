/**
 * WorkerPool when threads misbehave, with real piscina threads: a
 * thread that crashes (throws outside any handler, exits, leaves a rejection
 * unhandled), a handler that never yields, a handler that blocks past its
 * lease and then returns (a zombie), and a handler module slow to load. In
 * every case the misbehaving thread may lose only its own lease; its job is
 * retried and succeeds exactly once, and the pool gets its thread back.
 *
 * Handlers (test/fixtures/pool-handlers.mjs) misbehave on attempt 1 only and
 * log JSON lines into a temp directory; the tests read the whole log.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { HANDLERS, type Scratch, scratch, track, until } from '../support/pool-harness.js';


/** Short enough to keep the tests quick, long enough that a thread can start within it on a loaded machine. */
const LEASE = 500;

function crashQueue(maxAttempts = 3): JobQueue {
  return new JobQueue(systemClock, new RetryPolicy(maxAttempts, 0, 0));
}

/** Two jobs that can only succeed together, at once, on two different threads (concurrency 1). */
async function expectTwoLiveThreads(queue: JobQueue, pool: WorkerPool, s: Scratch, group: string, giveUpMillis = 5_000): Promise<void> {
  const ids = [0, 1].map(() => queue.submit('meet', s.payload({ group, parties: 2, giveUpMillis })));
  await until(`both ${group} jobs finished`, () => ids.every((id) => ['SUCCEEDED', 'DEAD'].includes(queue.view(id).status)), 3 * giveUpMillis);
  const stats = JSON.stringify(pool.stats());
  for (const id of ids) expect(queue.view(id), `${id} of group ${group}; pool ${stats}`).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  const threads = new Set(s.events('ok').filter((l) => l.group === group).map((l) => l.threadId));
  expect(threads.size).toBe(2);
}

describe('a thread that crashes', { timeout: 20_000 }, () => {
  it.each([
    ['throws outside any handler (from a timer)', 'crashByThrow'],
    ['calls process.exit mid-job', 'crashByExit'],
    ['leaves a promise rejection unhandled', 'crashByRejection'],
  ])('loses only its own lease when it %s: the job is retried and succeeds once, the thread is replaced', async (_, type) => {
    const s = scratch();
    const queue = crashQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: LEASE }));
    await pool.start();
    // A bystander on the other thread, running across the crash.
    const bystander = queue.submit('slow', s.payload({ ms: 4 * LEASE }));
    await until('the bystander started', () => s.events('start', bystander).length === 1);
    const victim = queue.submit(type, s.payload());
    await until('the victim finished', () => queue.view(victim).status === 'SUCCEEDED', 15_000, () => queue.view(victim));
    await until('the crashed thread was replaced', () => pool.stats().restarts >= 1);

    // Handed back by the pool as soon as the thread died (README: failure table), not left to expire.
    expect(queue.view(victim)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'the worker thread died while running the job' });
    expect(s.events('start', victim).map((l) => l.attempt)).toEqual([1]);
    expect(s.events('ok', victim).map((l) => l.attempt)).toEqual([2]);

    await until('the bystander finished', () => queue.view(bystander).status === 'SUCCEEDED');
    expect(queue.view(bystander).attempts).toBe(1);
    expect(s.events('ok', bystander)).toHaveLength(1);
    expect(s.events('start', bystander)[0]!.threadId).not.toBe(s.events('start', victim)[0]!.threadId);

    await expectTwoLiveThreads(queue, pool, s, 'after-crash');
    expect(pool.stats()).toMatchObject({ succeeded: 4, running: 0, pending: 0, refused: 0 });
  });

  it('hands back every job the thread held at once (concurrency 3), well before their leases would expire; each succeeds exactly once', async () => {
    const s = scratch();
    const queue = crashQueue();
    const leaseMillis = 8_000;
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, concurrency: 3, leaseMillis }));
    await pool.start();
    const riders = [0, 1].map(() => queue.submit('slow', s.payload({ ms: 3_000, laterMs: 0 })));
    await until('both riders started', () => riders.every((id) => s.events('start', id).length === 1));
    const crasher = queue.submit('crashByExit', s.payload());
    const all = [...riders, crasher];
    // Within half a lease: only a hand-back can retry them this soon (their leases run for 8 s).
    await until('all three succeeded', () => all.every((id) => queue.view(id).status === 'SUCCEEDED'), leaseMillis / 2, () => all.map((id) => queue.view(id)));
    for (const id of all) {
      expect(queue.view(id).attempts, id).toBe(2);
      expect(s.events('ok', id).map((l) => l.attempt), id).toEqual([2]);
    }
    expect(pool.stats()).toMatchObject({ succeeded: 3, restarts: 1, refused: 0 });
  });

  it('dead-letters a job that takes its thread down on every attempt after maxAttempts, and keeps serving others', async () => {
    const s = scratch();
    const queue = crashQueue(3);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: LEASE }));
    await pool.start();
    const poison = queue.submit('crashAlways', s.payload());
    await until('the poison job is dead', () => queue.view(poison).status === 'DEAD', 15_000, () => queue.view(poison));
    expect(queue.view(poison).attempts).toBe(3);
    expect(s.events('start', poison).map((l) => l.attempt)).toEqual([1, 2, 3]);
    await until('every crashed thread was replaced', () => pool.stats().restarts >= 3);
    await expectTwoLiveThreads(queue, pool, s, 'after-poison');
  });
});

describe('a thread that hangs', { timeout: 20_000 }, () => {
  it('loses its job past its lease to another thread, is terminated and replaced', async () => {
    const s = scratch();
    const queue = crashQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: LEASE }));
    await pool.start();
    const id = queue.submit('hang', s.payload());
    await until('the job succeeded', () => queue.view(id).status === 'SUCCEEDED', 15_000, () => queue.view(id));
    expect(queue.view(id).attempts).toBe(2);
    const [hung] = s.events('start', id);
    const [ok, ...more] = s.events('ok', id);
    expect(more).toEqual([]);
    expect(ok!.attempt).toBe(2);
    expect(ok!.threadId).not.toBe(hung!.threadId);
    // The busy loop would spin for 30 s; the thread is terminated instead, and replaced.
    await until('the hung thread was replaced', () => pool.stats().restarts >= 1);
    await expectTwoLiveThreads(queue, pool, s, 'after-hang');
    expect(s.events('hang-ended')).toEqual([]);
  });

  it('by blocking synchronously past its lease loses only that lease: the job succeeds once elsewhere, and the late complete is refused', async () => {
    const s = scratch();
    const queue = crashQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: LEASE }));
    await pool.start();
    const id = queue.submit('block', s.payload({ blockMillis: 1.5 * LEASE }));
    await until('the job succeeded', () => queue.view(id).status === 'SUCCEEDED', 15_000, () => queue.view(id));
    await until('the zombie returned', () => s.events('zombie-returns', id).length === 1, 5_000, () => ({ log: s.lines(), stats: pool.stats() }));
    await until('its complete was refused', () => pool.stats().refused >= 1, 5_000, () => pool.stats());
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    expect(s.events('ok', id)).toHaveLength(1);
    expect(pool.stats().succeeded).toBe(1);
  });
});

describe('a thread that is still starting', { timeout: 20_000 }, () => {
  it('is not taken for a hung one: a handler module slower to load than leaseMillis causes no restarts', async () => {
    const s = scratch();
    const queue = crashQueue(1);
    // Each new thread spends 600 ms importing this module before its loop ticks; the lease is 200 ms.
    const handlers = new URL('../fixtures/pool-slow-load.mjs', import.meta.url);
    const pool = track(new WorkerPool(queue, { handlers, threads: 2, leaseMillis: 200 }));
    await pool.start();
    await expectTwoLiveThreads(queue, pool, s, 'slow-load', 3_000);
    expect(pool.stats().restarts).toBe(0);
  });
});
