/**
 * Patience (src/shm/patience.ts): how long a watcher waits for a thread that
 * shows no progress before it presumes it dead is `lockTimeoutMillis`,
 * doubled each time a thread so presumed turns out to be alive, up to 64×.
 * Without it, on a machine with more busy threads than cores, takeovers of
 * holders that were only waiting for a core fed each other (each costs a
 * rebuild, itself taken over) until hardly a job moved.
 *
 * The lock cases run two QueueLocks of one word in this thread: while this
 * thread waits in one, the other's holder cannot run, which is exactly a
 * holder stalled (the stall is the wait itself, so the times are lower bounds).
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { ATTENTION, GATE, HINTS_STALE, LOCK_WORD_COUNT, PATIENCE, Patience, QueueLock, QueueMemory, maintenanceOf } from '../../dist/testing/core-internals.js';
import { startWorker, terminateAll, withTimeout } from '../support/helpers.js';

const TIMEOUT = 40;

function lockWords(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(LOCK_WORD_COUNT * 4));
}

/** Milliseconds `lock.acquire()` took, and whether it took the lock over. */
function timedAcquire(lock: QueueLock): { millis: number; tookOver: boolean } {
  const start = performance.now();
  const tookOver = lock.acquire();
  return { millis: performance.now() - start, tookOver };
}

describe('patience', () => {
  it('takes a silent holder over after lockTimeoutMillis, and after twice that once a holder so taken turned out alive', () => {
    const words = lockWords();
    const stalled = new QueueLock(words, new Patience(words, TIMEOUT));
    const watcher = new QueueLock(words, new Patience(words, TIMEOUT));

    stalled.acquire();
    const first = timedAcquire(watcher);
    expect(first.tookOver).toBe(true);
    expect(first.millis).toBeGreaterThanOrEqual(TIMEOUT);
    expect(Atomics.load(words, PATIENCE), 'nobody knows yet that the holder lives').toBe(0);
    // The stalled holder wakes and releases: its lock is gone, so the watcher misjudged it.
    stalled.release();
    expect(Atomics.load(words, PATIENCE)).toBe(1);
    expect(Atomics.load(words, ATTENTION), 'what it wrote since may undo the repairs: stale, and the gate shut').toBe(GATE | HINTS_STALE);
    watcher.release();

    expect(stalled.acquire(), 'the hints are stale: this holder rebuilds').toBe(true);
    expect(Atomics.load(words, ATTENTION), 'the mark taken, the gate left to the rebuild').toBe(GATE);
    const second = timedAcquire(watcher);
    expect(second.tookOver).toBe(true);
    expect(second.millis).toBeGreaterThanOrEqual(2 * TIMEOUT);
    stalled.release();
    watcher.release();
    expect(Atomics.load(words, PATIENCE)).toBe(2);
  });

  it('raises nothing when holders release their own lock, however long they held it', () => {
    const words = lockWords();
    const a = new QueueLock(words, new Patience(words, TIMEOUT));
    const b = new QueueLock(words, new Patience(words, TIMEOUT));
    for (let i = 0; i < 100; i++) {
      const lock = i % 2 === 0 ? a : b;
      expect(lock.acquire()).toBe(false);
      if (i === 50) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2 * TIMEOUT);
      lock.release();
    }
    expect(Atomics.load(words, PATIENCE)).toBe(0);
    expect(new Patience(words, TIMEOUT).millis()).toBe(TIMEOUT);
  });

  it('never waits longer than 64 × lockTimeoutMillis or 4 s, whichever is less, however many misjudgements', () => {
    const words = lockWords();
    const patience = new Patience(words, TIMEOUT);
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) {
      patience.misjudged();
      seen.push(patience.millis());
    }
    expect(seen).toEqual([2, 4, 8, 16, 32, 64, 64, 64, 64, 64].map((k) => k * TIMEOUT));
    // Shared through the words: another thread's instance of the same queue waits as long.
    expect(new Patience(words, TIMEOUT).millis()).toBe(64 * TIMEOUT);
    // The default lockTimeoutMillis reaches the ceiling after three doublings; a longer one is never raised.
    expect(new Patience(words, 500).millis()).toBe(4_000);
    const fresh = lockWords();
    const byDefault = new Patience(fresh, 500);
    const raised = [1, 2, 3, 4].map(() => (byDefault.misjudged(), byDefault.millis()));
    expect(raised).toEqual([1_000, 2_000, 4_000, 4_000]);
    expect(new Patience(fresh, 10_000).millis()).toBe(10_000);
  });

  it('is raised by a thread whose row was revoked while it only stalled inside a lock-free call, at its next call', async () => {
    const START = 1_767_225_600_000;
    const CTL = { READY: 0, SUBMITTED: 1, STALLED: 2, GO: 3 };
    const clock = new ManualClock(START);
    const policy = new RetryPolicy(3, 0, 0);
    const queue = new JobQueue(clock, policy, { lockTimeoutMillis: TIMEOUT });
    const handle = queue.share();
    const controlBuffer = new SharedArrayBuffer(4 * 4);
    const control = new Int32Array(controlBuffer);
    const signalled = async (at: number) => {
      while (Atomics.load(control, at) === 0) await Atomics.waitAsync(control, at, 0).value;
    };
    const set = (at: number) => {
      Atomics.store(control, at, 1);
      Atomics.notify(control, at);
    };
    const staller = await startWorker('gate-worker.mjs', { role: 'staller', pollAgain: true, handle, clockBuffer: clock.buffer, controlBuffer, CTL });
    try {
      await signalled(CTL.READY);
      const id = queue.submit('t', 'p');
      set(CTL.SUBMITTED);
      await signalled(CTL.STALLED);

      // A rebuild watches the staller's row inside its claim for lockTimeoutMillis, then revokes it.
      const memory = new QueueMemory(handle.buffers, TIMEOUT);
      const words = memory.lockWords;
      memory.lock.acquire();
      const start = performance.now();
      maintenanceOf(memory, policy, clock).rebuild(clock.now());
      const watched = performance.now() - start;
      memory.lock.release();
      expect(watched).toBeGreaterThanOrEqual(TIMEOUT);
      expect(Atomics.load(words, PATIENCE), 'the staller has not run since').toBe(0);

      set(CTL.GO);
      const result = (await withTimeout(staller.result, 10_000, 'the staller')) as { jobId?: string; next?: string };
      expect(result.jobId).toBe(id);
      expect(result.next).toBeUndefined();
      expect(Atomics.load(words, PATIENCE), 'raised by the staller, alive after all').toBe(1);
      expect(memory.patience.millis()).toBe(2 * TIMEOUT);
      expect(queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 1, workerId: 'staller' });
    } finally {
      await terminateAll([staller]);
      queue.close();
    }
  }, 30_000);
});
