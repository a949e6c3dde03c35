/**
 * An idle pool thread blocks for work (`JobQueue#blockForWork`, Atomics.wait)
 * rather than waiting through its event loop: a submit wakes it at once, and
 * while nothing comes it uses no CPU. Handshakes and counts, not timing
 * windows: a missed wake-up shows as a wait that never ends (the test's
 * bound), a spurious one as `true` where no work came, a busy-spin as the
 * idle thread's CPU time keeping up with a thread that computes.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { IllegalStateError, InvalidArgumentError, JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { IDLE_WAITERS } from '../../dist/testing/core-internals.js';
import { threadCpuTicks } from '../fixtures/thread-cpu.mjs';
import { withTimeout } from '../support/helpers.js';
import { track, trackQueue } from '../support/pool-harness.js';

/** Far longer than any test here may take: only a wake-up ends such a wait in time. */
const FOREVER = 120_000;
/** How long the blocks that must not be woken last. */
const SHORT = 300;
const HANDLERS = new URL('../fixtures/pool-idle-handlers.mjs', import.meta.url);

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.terminate()));
});

/** A thread that polls (finding nothing), then blocks for work; resolves once it polled, with the block's outcome to come. */
async function pollThenBlock(queue: JobQueue, wait: number, gated = false): Promise<{ woke: Promise<{ woke: boolean; next: string | null }>; go(): void }> {
  const worker = new Worker(new URL('../fixtures/pool-block-worker.mjs', import.meta.url), { workerData: { handle: queue.share() } });
  workers.push(worker);
  const next = () => nextMessage(worker);
  const polled = next();
  worker.postMessage({ wait, go: gated });
  expect(await withTimeout(polled, 10_000, 'the worker polled')).toEqual({ polled: true, found: null });
  return { woke: next() as Promise<{ woke: boolean; next: string | null }>, go: () => worker.postMessage('go') };
}

/** The thread's next message; its error rejects. */
function nextMessage(worker: Worker): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

/** Resolves once `count` threads count themselves idle on the work signal (see WorkSignal#block). */
async function untilIdle(lockWords: Int32Array, count: number): Promise<void> {
  while (Atomics.load(lockWords, IDLE_WAITERS) < count) await new Promise((resolve) => setTimeout(resolve, 1));
}

describe('blockForWork across threads', { timeout: 20_000 }, () => {
  const queueOf = () => trackQueue(new JobQueue(systemClock, new RetryPolicy(3, 50_000, 50_000)));

  it('returns true after a submit from another thread, and the job is there', async () => {
    const queue = queueOf();
    const { woke } = await pollThenBlock(queue, FOREVER);
    const id = queue.submit('t', 'x');
    expect(await withTimeout(woke, 10_000, 'the wake-up')).toEqual({ woke: true, next: id });
  });

  it('returns true at once when the submit came between the poll and the block', async () => {
    const queue = queueOf();
    const { woke, go } = await pollThenBlock(queue, FOREVER, true);
    const id = queue.submit('t', 'x');
    go();
    expect(await withTimeout(woke, 10_000, 'the wake-up')).toEqual({ woke: true, next: id });
  });

  it('returns true after a failed attempt (its retry) in another thread', async () => {
    const queue = queueOf();
    const id = queue.submit('t', 'x');
    const lease = queue.poll('main', 60_000)!;
    const { woke } = await pollThenBlock(queue, FOREVER);
    queue.fail(id, lease.token, 'boom');
    expect((await withTimeout(woke, 10_000, 'the wake-up')).woke).toBe(true);
  });

  it('blocks until its timeout, returning false, while calls that bring no new work run in another thread', async () => {
    const queue = queueOf();
    const running = queue.submit('t', 'held');
    const lease = queue.poll('main', 60_000)!;
    const { woke } = await pollThenBlock(queue, SHORT);
    queue.extend(running, lease.token, 60_000);
    queue.stats();
    queue.complete(running, lease.token);
    expect(await withTimeout(woke, 10_000, 'the block')).toEqual({ woke: false, next: null });
  });

  it('wakes a second blocked thread for a second job while the first thread holds its own: no wake skipped', async () => {
    const queue = queueOf();
    const THREADS = 2;
    const holders = Array.from({ length: THREADS }, () => {
      const worker = new Worker(new URL('../fixtures/pool-block-holder.mjs', import.meta.url), { workerData: { handle: queue.share() } });
      workers.push(worker);
      return worker;
    });
    const lockWords = new Int32Array(queue.share().buffers.lockWords);
    for (const holder of holders) holder.postMessage('look');
    for (let round = 0; round < 20; round++) {
      // Every thread counts itself idle (IDLE_WAITERS) before it blocks: once all do, the jobs come while all sleep (or are about
      // to, which the block's check of the signal covers). Each job must then reach a thread of its own: the one that leased the
      // first holds it and polls no more, so the second is leased only if its submit woke a thread.
      await withTimeout(untilIdle(lockWords, THREADS), 10_000, `round ${round}: all threads blocked`);
      const leases = holders.map((holder) => nextMessage(holder) as Promise<{ leased: string }>);
      const ids = [queue.submit('t', `a${round}`), queue.submit('t', `b${round}`)];
      const leased = await withTimeout(Promise.all(leases), 10_000, `round ${round}: each job leased`);
      expect(leased.map((lease) => lease.leased).sort()).toEqual([...ids].sort());
      for (const holder of holders) holder.postMessage('release');
    }
  });

  it('refuses a timeout that is not a number >= 0, and a closed queue, at once', async () => {
    const queue = queueOf();
    for (const timeout of [-1, Number.NaN, '5' as unknown as number]) {
      const error = (() => {
        try {
          queue.blockForWork(timeout);
        } catch (thrown) {
          return thrown;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as InvalidArgumentError).code).toBe('ERR_INVALID_ARGUMENT');
    }
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0 });
    queue.close();
    expect(() => queue.blockForWork(FOREVER)).toThrow(IllegalStateError);
  });
});

describe('an idle WorkerPool thread', { timeout: 60_000 }, () => {
  it('starts each of a run of sparse jobs, submitted while it is idle, once', async () => {
    const queue = trackQueue(new JobQueue(systemClock, new RetryPolicy(1, 0, 0)));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1 }));
    await pool.start();
    const threads = new Set<number>();
    for (let job = 0; job < 20; job++) {
      // Each job is submitted once the last one has finished: the thread has gone back to waiting for work.
      const { threadId } = (await withTimeout(queue.finished(queue.submit('cpu', '')), 10_000, `job ${job}`)) as { threadId: number };
      threads.add(threadId);
    }
    expect(threads.size).toBe(1);
    expect(queue.stats()).toMatchObject({ succeeded: 20, pending: 0, running: 0, dead: 0 });
  });

  // The first job starts straight from the wake, the others once its handler yields: still before any turn of the event loop.
  it('starts every job ready at its wake up to `concurrency` before its event loop turns', async () => {
    const queue = trackQueue(new JobQueue(systemClock, new RetryPolicy(1, 0, 0)));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, concurrency: 3 }));
    await pool.start();
    await untilIdle(new Int32Array(queue.share().buffers.lockWords), 1);
    // Paused, no poll hands out a job: both are in the rings before the resume's wake, whenever the thread looks.
    queue.pause();
    const ids = queue.submitMany([{ type: 'company' }, { type: 'company' }]);
    queue.resume();
    const companies = await Promise.all(ids.map((id) => withTimeout(queue.finished(id), 10_000, `job ${id}`)));
    expect(companies).toEqual([[ids[1]], [ids[0]]]);
  });

  it.skipIf(process.platform !== 'linux')('uses next to no CPU while idle: far less than a thread computing meanwhile', async () => {
    const queue = trackQueue(new JobQueue(systemClock, new RetryPolicy(1, 0, 0)));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1 }));
    await pool.start();
    type Cpu = { threadId: number; ticks: number };
    const before = (await queue.finished(queue.submit('cpu', ''))) as Cpu;
    // The idle spell: as long as this thread takes to use BURN_TICKS of CPU. A pool thread that spun meanwhile
    // would get its share of a core as this one does (about as many ticks, however loaded the machine).
    const BURN_TICKS = 40;
    const start = threadCpuTicks();
    let spins = 0;
    while (threadCpuTicks() - start < BURN_TICKS) spins++;
    const burned = threadCpuTicks() - start;
    const after = (await queue.finished(queue.submit('cpu', ''))) as Cpu;
    expect(after.threadId).toBe(before.threadId);
    expect(spins).toBeGreaterThan(0);
    // Idle: a turn of its event loop every tick (20 ms), a few µs each. Loosely: a quarter of the busy thread's.
    expect(after.ticks - before.ticks).toBeLessThan(burned / 4);
  });
});
