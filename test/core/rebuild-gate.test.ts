/**
 * The rebuild's gate (Rebuilder#rebuild): a rebuild shuts it so that no
 * lock-free call runs while the indexes are re-derived from the slots. A
 * rebuilder that waits for a stalled lock-free call (its quiesce) as long as
 * the lock's waiters wait for it looks dead to them and is taken over; it
 * then leaves its rebuild by LockLost while its successor rebuilds behind the
 * same gate bit. Had it opened the gate on its way out, lock-free moves would
 * run under the successor's rebuild, which then skips a slot BUSY at its scan
 * (a job missing from the job map: "was evicted" to its worker) and files a
 * ready entry with a word read after the scan (a SUCCEEDED job claimed again)
 * — the failures of threads.test.ts "stays correct when a live thread stalls".
 *
 * And a rebuilder taken over after its scan (its sort of every ready job
 * touches no lock) must not file a job with the word the slot holds by then:
 * lock-free moves resume once its successor's rebuild is done, and a job
 * claimed and completed meanwhile, filed with its SUCCEEDED word, would be
 * claimed again. It files the word its scan saw READY: a stale entry.
 *
 * Real threads, with handshakes over shared memory: the staller's clock blocks
 * inside its claim until the test lets it go; the rebuilder (the built
 * internals, with a lock timeout too long to presume the staller dead) waits
 * for it, or stalls as it files; this thread, with a short one, takes the lock over.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { QueueMemory, maintenanceOf } from '../../dist/testing/core-internals.js';
import { startWorker, terminateAll, withTimeout } from '../support/helpers.js';

const START = 1_767_225_600_000;
const CTL = { READY: 0, SUBMITTED: 1, STALLED: 2, GO: 3 };
const CTL_WORDS = 4;

/** Resolves once `control[at]` is no longer 0 (the other thread notifies it). */
async function signalled(control: Int32Array, at: number): Promise<void> {
  while (Atomics.load(control, at) === 0) await Atomics.waitAsync(control, at, 0).value;
}

/** Resolves once `condition()` holds: for a state another thread reaches without notifying (looked at every millisecond). */
async function reached(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} was not reached within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

function set(control: Int32Array, at: number): void {
  Atomics.store(control, at, 1);
  Atomics.notify(control, at);
}

describe('the rebuild gate', () => {
  it("stays shut for the successor's rebuild when a rebuilder taken over leaves its own", async () => {
    const clock = new ManualClock(START);
    const policy = new RetryPolicy(3, 0, 0);
    const queue = new JobQueue(clock, policy, { lockTimeoutMillis: 20 });
    const handle = queue.share();
    const controlBuffer = new SharedArrayBuffer(CTL_WORDS * 4);
    const control = new Int32Array(controlBuffer);
    const data = { handle, clockBuffer: clock.buffer, controlBuffer, CTL };
    const staller = await startWorker('gate-worker.mjs', { ...data, role: 'staller' });
    const workers = [staller];
    try {
      await signalled(control, CTL.READY);
      const id = queue.submit('t', 'p');
      set(control, CTL.SUBMITTED);
      // The staller is inside its lock-free claim of the job, between reading it and its decision.
      await signalled(control, CTL.STALLED);

      const rebuilder = await startWorker('gate-worker.mjs', { ...data, role: 'rebuilder' });
      workers.push(rebuilder);
      const memory = new QueueMemory(handle.buffers, 20);
      await reached(() => memory.lock.taken() && memory.rows.gateShut(), 'the rebuilder holding the lock with its gate shut');

      // The successor: it takes the lock over from the rebuilder, which waits for the staller without touching it.
      expect(memory.lock.acquire(), 'a takeover').toBe(true);
      // Its rebuild from the first step (the gate) to the last, with the staller let go in between: the
      // staller's call leaves, the rebuilder's wait ends, and it finds its lock gone.
      const successor = maintenanceOf(memory, policy, clock);
      expect(memory.rows.gateShut(), 'the gate while the rebuilder waits').toBe(true);
      set(control, CTL.GO);
      const lease = (await withTimeout(staller.result, 10_000, 'the staller')) as { jobId?: string; token?: number };
      const left = (await withTimeout(rebuilder.result, 10_000, 'the rebuilder')) as { lockLost: boolean };
      expect(left.lockLost).toBe(true);
      expect(memory.rows.gateShut(), 'the gate, after the rebuilder taken over left its rebuild').toBe(true);
      successor.rebuild(clock.now());
      memory.lock.release();
      // The rebuilder let go during the successor's hold, which cannot tell whether its rebuild came after
      // whatever the rebuilder wrote: the gate stays shut until the next holder has rebuilt.
      expect(memory.rows.gateShut(), 'the gate after a rebuild that a late release may postdate').toBe(true);

      // The staller's claim stands, once: the job is its lease, and nothing else is ready.
      expect(lease.jobId).toBe(id);
      expect(queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 1, workerId: 'staller' });
      expect(memory.rows.gateShut(), 'the gate once the next holder (the view) rebuilt').toBe(false);
      // Its token is the job's one valid lease: a complete with it succeeds, and the job stays done.
      queue.complete(id, lease.token!);
      expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      expect(queue.poll('main', 1_000)).toBeUndefined();
      expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 1 });
    } finally {
      await terminateAll(workers);
      queue.close();
    }
  }, 30_000);

  it('never files a job for a word read after its scan when the rebuilder is taken over before it files', async () => {
    const clock = new ManualClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { lockTimeoutMillis: 20 });
    const handle = queue.share();
    const controlBuffer = new SharedArrayBuffer(CTL_WORDS * 4);
    const control = new Int32Array(controlBuffer);
    const ids = [queue.submit('t', 'p1'), queue.submit('t', 'p2')];
    const filer = await startWorker('gate-worker.mjs', { handle, clockBuffer: clock.buffer, controlBuffer, CTL, role: 'filer' });
    try {
      // The filer's rebuild has scanned both jobs READY, and stalls as it files the first.
      await signalled(control, CTL.STALLED);
      // This thread takes the lock over (the filer looks dead) and rebuilds; it leases and completes both jobs,
      // each poll under the lock (a worker name seen for the first time), so the ready ring is empty after them.
      for (const [k, id] of ids.entries()) {
        const lease = queue.poll(`main-${k}`, 1_000);
        expect(lease?.jobId).toBe(id);
        queue.complete(id, lease!.token);
      }
      set(control, CTL.GO);
      const left = (await withTimeout(filer.result, 10_000, 'the filer')) as { lockLost: boolean };

      // What the filer filed on waking is no lease (a lock-free poll, the worker being known now): both jobs stay done, once.
      expect(queue.poll('main-0', 1_000)?.jobId, 'a poll after the filer woke').toBeUndefined();
      for (const id of ids) expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 2 });
      // And the filer found its lock gone before it went on to the arena and the counts.
      expect(left.lockLost).toBe(true);
    } finally {
      await terminateAll([filer]);
      queue.close();
    }
  }, 30_000);
});
