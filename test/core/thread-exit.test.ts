/**
 * `threadExited`: a worker thread that is terminated or crashes cannot give
 * its queue row back (the per-instance state its lock-free calls use), and a
 * queue has 127. Told that a thread exited, the queue frees its rows, so
 * that threads started later still get one.
 */
import { threadId } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { QueueMemory, ROW_CALL, ROW_OWNED, ROW_REVOKED, ROW_STATE, ROW_WORDS } from '../../dist/testing/core-internals.js';
import { startWorker, withTimeout } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';
import { HANDLERS, scratch, track, until } from '../support/pool-harness.js';

/** More threads than a queue has rows (127): without the rows given back, the last ones find none free. */
const MORE_THAN_ROWS = 140;

/** Starts a thread that attaches and completes one job; resolves once it has, with its Worker. */
async function attachedThread(handle: unknown) {
  const thread = await startWorker('attach-and-stay.mjs', { handle });
  const reply = (await withTimeout(thread.result, 10_000, 'a thread attaching')) as { completed: string | null };
  return { ...thread, reply };
}

describe('threadExited', () => {
  it('frees the row of every terminated thread, so that each of 140 threads in turn gets one and completes its job', async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
    const ids = Array.from({ length: MORE_THAN_ROWS }, (_, i) => queue.submit('job', `${i}`));
    const freed: number[] = [];
    for (let i = 0; i < MORE_THAN_ROWS; i++) {
      const thread = await attachedThread(queue.share());
      expect(thread.reply.completed).toBe(ids[i]);
      const exitedId = thread.worker.threadId;
      await thread.worker.terminate();
      freed.push(queue.threadExited(exitedId));
    }
    // One row each: without it, a thread past the 127th would have found none (0 freed).
    expect(freed).toEqual(Array.from({ length: MORE_THAN_ROWS }, () => 1));
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: MORE_THAN_ROWS });
  }, 120_000);

  it('frees the row of a terminated thread on a journaled queue too, and what the thread committed stays', async () => {
    const path = tempJournal();
    let queue = openJournal(path, systemClock, new RetryPolicy(3, 0, 0));
    const id = queue.submit('job', 'durable');
    const thread = await attachedThread(queue.share());
    expect(thread.reply.completed).toBe(id);
    const exitedId = thread.worker.threadId;
    await thread.worker.terminate();
    expect(queue.threadExited(exitedId)).toBe(1);
    closeJournal(queue);
    queue = openJournal(path, systemClock, new RetryPolicy(3, 0, 0));
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  }, 30_000);

  it('frees nothing of a thread that held no row, nor twice, and leaves a live thread its row', async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
    queue.submit('job', 'a');
    const live = await attachedThread(queue.share());
    const gone = await attachedThread(queue.share());
    const goneId = gone.worker.threadId;
    await gone.worker.terminate();
    expect(queue.threadExited(goneId)).toBe(1);
    expect(queue.threadExited(goneId)).toBe(0);
    try {
      // Never attached to this queue: an id no row names.
      expect(queue.threadExited(live.worker.threadId + 1000)).toBe(0);
      // The live thread's row is still its own: its exit frees it.
      const liveId = live.worker.threadId;
      await live.worker.terminate();
      expect(queue.threadExited(liveId)).toBe(1);
    } finally {
      await live.worker.terminate();
    }
  }, 30_000);

  it('frees the row of a thread killed inside a lock-free call at once, finishing what it left, and its next owner is not taken for dead', async () => {
    const clock = new ManualClock(1_767_225_600_000);
    // A lock timeout far longer than the test: the row is not presumed dead by watching, only by threadExited.
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { lockTimeoutMillis: 600_000 });
    const handle = queue.share();
    const memory = new QueueMemory(handle.buffers, 600_000);
    const rowsIn = (state: number) => {
      const rows: number[] = [];
      for (let row = 1; row < memory.rows.highWater; row++) if (Atomics.load(memory.rows.words, row * ROW_WORDS + ROW_STATE) === state) rows.push(row);
      return rows;
    };
    const inCall = (row: number) => (Atomics.load(memory.rows.words, row * ROW_WORDS + ROW_CALL) & 1) === 1;
    // A thread whose clock stalls inside its lock-free poll (gate-worker.mjs), killed there: its row's CALL stays odd.
    const CTL = { READY: 0, SUBMITTED: 1, STALLED: 2, GO: 3 };
    const control = new Int32Array(new SharedArrayBuffer(4 * 4));
    const signalled = async (at: number) => {
      while (Atomics.load(control, at) === 0) await Atomics.waitAsync(control, at, 0).value;
    };
    const staller = await startWorker('gate-worker.mjs', { role: 'staller', handle, clockBuffer: clock.buffer, controlBuffer: control.buffer, CTL });
    await withTimeout(signalled(CTL.READY), 10_000, 'the staller attaching');
    const job = queue.submit('job', 'x');
    Atomics.store(control, CTL.SUBMITTED, 1);
    Atomics.notify(control, CTL.SUBMITTED);
    await withTimeout(signalled(CTL.STALLED), 10_000, 'the staller stalling inside its poll');
    const [stallerRow] = rowsIn(ROW_OWNED).filter(inCall);
    expect(stallerRow).toBeDefined();
    const stallerId = staller.worker.threadId;
    await staller.worker.terminate();

    // Freed at once, not after 600 s of watching: its row is out of any call, and free.
    expect(await withTimeout(Promise.resolve().then(() => queue.threadExited(stallerId)), 5_000, 'threadExited')).toBe(1);
    expect(rowsIn(ROW_REVOKED)).toEqual([]);
    expect(rowsIn(ROW_OWNED)).not.toContain(stallerRow);
    expect(inCall(stallerRow!)).toBe(false);
    // Its claim was cut short before its decision: the job is still ready, for this thread.
    expect(queue.poll('main', 1_000)?.jobId).toBe(job);

    // The next thread takes the freed row; idle between calls, it reads as out of any call, and a poll that finds nothing (which waits out calls in flight) does not wait for it.
    const next = await attachedThread(handle);
    try {
      expect(rowsIn(ROW_OWNED)).toContain(stallerRow);
      expect(inCall(stallerRow!)).toBe(false);
      expect(queue.poll('main', 1_000)).toBeUndefined();
      expect(rowsIn(ROW_REVOKED)).toEqual([]);
    } finally {
      await next.worker.terminate();
    }
  }, 30_000);

  it.each([
    ['a string', 'T1'],
    ['zero (the main thread)', 0],
    ['a negative number', -3],
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['this thread itself', threadId],
  ])('refuses %s with ERR_INVALID_ARGUMENT, changing nothing', (_, value) => {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
    expect(() => queue.threadExited(value as number)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }));
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0 });
  });

  it('refuses a closed instance with ERR_ILLEGAL_STATE', () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
    queue.close();
    expect(() => queue.threadExited(12345)).toThrow(expect.objectContaining({ code: 'ERR_ILLEGAL_STATE' }));
  });
});

describe('a WorkerPool whose queue was closed under it', () => {
  it("lets its threads exit without an uncaught error: there is nothing to free through the closed instance", async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    let calls = 0;
    const reclaim = queue.threadExited.bind(queue);
    queue.threadExited = (exited: number) => {
      calls++;
      return reclaim(exited);
    };
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const pool = new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 5_000 });
      await pool.start();
      queue.close();
      await pool.close();
      await until('both threads told their exit', () => calls >= 2, 10_000, () => ({ calls }));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
    expect(() => reclaim(12345)).toThrow(expect.objectContaining({ code: 'ERR_ILLEGAL_STATE' }));
  }, 30_000);
});

describe('a WorkerPool whose threads crash', () => {
  it('frees the rows of its crashed threads: after 140 crashes a new thread still gets one', async () => {
    const s = scratch();
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    const reclaim = queue.threadExited.bind(queue);
    let freed = 0;
    queue.threadExited = (exited: number) => {
      const rows = reclaim(exited);
      freed += rows;
      return rows;
    };
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 5_000 }));
    await pool.start();
    const poisons = Array.from({ length: MORE_THAN_ROWS }, () => queue.submit('crashAlways', s.payload()));
    await until('every poison job is dead', () => queue.stats().dead === MORE_THAN_ROWS, 100_000, () => queue.stats());
    await until('the last crashed thread was given back', () => freed >= MORE_THAN_ROWS, 10_000, () => ({ freed, restarts: pool.stats().restarts }));
    await pool.close();
    expect(queue.deadLetters().map((v) => v.id)).toEqual(poisons);
    // A row is still free: a thread that attaches now holds one, which its exit frees.
    queue.submit('job', 'after');
    const thread = await attachedThread(queue.share());
    const threadIdOfIt = thread.worker.threadId;
    await thread.worker.terminate();
    expect(reclaim(threadIdOfIt)).toBe(1);
  }, 120_000);
});
