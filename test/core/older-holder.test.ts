/**
 * A lock-free call must not show the queue as it was before a move of a lock
 * holder that runs at an older time (LAST_NOW earlier than the call's clock
 * reading) and is still at work: that move took effect at its time, before
 * the call began. The holder here is a submit that must evict a finished job
 * to make room. It reads the clock (under the lock), and, before it evicts,
 * stalls while the clock moves on and a thread makes one call on the job it
 * is about to evict — a call whose reading is later than the submit's. The
 * history checker found it so: a complete refused as stale (the job still
 * there) at a time after the submit that had evicted it, which only a
 * "not found" can follow.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, type SharedQueueHandle } from '../../dist/index.js';
import { QueueMemory } from '../../dist/testing/core-internals.js';
import { startWorker, terminateAll, withTimeout } from '../support/helpers.js';

const START = 1_767_225_600_000;
/** How long the stalled holder waits for the thread's call: a call that waits for the lock it holds never returns before it goes on. */
const STALL_MILLIS = 200;

/** Where a stalled holder stalls: at which of its call's clock readings, and how far it moves the shared clock on there. */
interface Stall {
  reading: number;
  advanceMillis: number;
}

/**
 * Makes `call` through a second instance of the queue in this thread, a lock
 * holder that stalls: at its `stall.reading`-th clock reading it moves the
 * shared clock on, gives the thread its go (control[0]) and waits until the
 * thread says it has made its move (control[1]), or STALL_MILLIS, before it
 * goes on. Returns what `call` returned, and whether the thread's move came
 * while it stalled.
 */
function stalledHolder<T>(handle: SharedQueueHandle, clock: ManualClock, control: Int32Array, stall: Stall, call: (holder: JobQueue) => T) {
  let readings = -1;
  let threadMoved = false;
  const holder = JobQueue.attach(handle, {
    now() {
      const reading = clock.now();
      if (readings >= 0 && ++readings === stall.reading) {
        clock.advance(stall.advanceMillis);
        Atomics.store(control, 0, 1);
        Atomics.notify(control, 0);
        threadMoved = Atomics.wait(control, 1, 0, STALL_MILLIS) !== 'timed-out';
      }
      return reading;
    },
  });
  // Armed only now: attaching reads the clock too.
  readings = 0;
  try {
    const returned = call(holder);
    return { returned, threadMoved };
  } finally {
    holder.close();
  }
}

/** A submit that stalls once it has read the clock under the lock, 50 ms before the thread's call; its job's id. */
function submitStalled(handle: SharedQueueHandle, clock: ManualClock, control: Int32Array, payload: string, priority = 0): string {
  return stalledHolder(handle, clock, control, { reading: 1, advanceMillis: 50 }, (holder) => holder.submit('t', payload, priority)).returned;
}

describe('a lock-free call while a holder of an older time is at work', () => {
  it.each(['complete', 'completeAndPoll', 'extend', 'view'])('%s of the job that holder evicts waits for it, and finds the job gone', async (action) => {
    const clock = new ManualClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { capacity: 2, lockTimeoutMillis: 10_000 });
    const handle = queue.share();
    const control = new Int32Array(new SharedArrayBuffer(8));
    const thread = await startWorker('older-holder-thread.mjs', { handle, controlBuffer: control.buffer, action });
    try {
      const { id } = (await withTimeout(thread.result, 10_000, 'the thread warming up')) as { id: string };
      const outcome = new Promise((resolve) => thread.worker.once('message', resolve));
      // The queue is full now: the thread's finished job is the one a new submit evicts.
      queue.submit('t', 'pending');
      submitStalled(handle, clock, control, 'evicts');
      expect(await withTimeout(outcome, 10_000, `the thread's ${action}`)).toEqual({ threw: 'ERR_JOB_NOT_FOUND' });
      expect(() => queue.view(id)).toThrow(expect.objectContaining({ code: 'ERR_JOB_NOT_FOUND' }));
    } finally {
      await terminateAll([thread]);
      queue.close();
    }
  });
});

describe('a lock-free poll while a holder of an older time is at work', () => {
  // The claim's own look, just before its decision, finds no holder when the holder released after the poll read its
  // ring: the poll must look before it reads the rings (the history checker found one that leased a worse job so).
  it('waits for that holder and leases the better job it files, even when the holder is done before the claim', async () => {
    const clock = new ManualClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { lockTimeoutMillis: 10_000 });
    const handle = queue.share();
    const control = new Int32Array(new SharedArrayBuffer(12));
    const thread = await startWorker('older-holder-poller.mjs', { handle, clockBuffer: clock.buffer, controlBuffer: control.buffer });
    try {
      expect(await withTimeout(thread.result, 10_000, 'the thread warming up')).toBe('ready');
      const leased = new Promise((resolve) => thread.worker.once('message', resolve));
      queue.submit('t', 'worse', 0);
      // The thread's poll has read the rings as it reads the clock for its claim: then the holder goes on.
      const better = submitStalled(handle, clock, control, 'better', 2);
      // The holder is done: the claim's look at the lock finds it free.
      Atomics.store(control, 2, 1);
      Atomics.notify(control, 2);
      expect(await withTimeout(leased, 10_000, "the thread's poll")).toBe(better);
    } finally {
      await terminateAll([thread]);
      queue.close();
    }
  });
});

describe('a lock-free poll while a holder claims a job from the overflow heap', () => {
  // The holder took the job off the heap and cleared OVERFLOW before its claim: a poll of the same time that came in
  // between went lock-free and leased a worse job while the better one was in no index and unclaimed (the history
  // checker found it so in CI).
  it('waits for the claim, and leases the next job only after it', async () => {
    const clock = new ManualClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { lockTimeoutMillis: 10_000 });
    const handle = queue.share();
    const control = new Int32Array(new SharedArrayBuffer(8));
    const thread = await startWorker('older-holder-thread.mjs', { handle, controlBuffer: control.buffer, action: 'poll' });
    try {
      await withTimeout(thread.result, 10_000, 'the thread warming up');
      const outcome = new Promise((resolve) => thread.worker.once('message', resolve));
      const worse = queue.submit('t', 'worse');
      // Due earlier than the ring's last entry: out of the ring's order, so it goes to the overflow heap.
      const better = queue.submit('t', 'better', 0, START - 10);
      // The holder's poll reads the clock first on its way in, then under the lock, then for its claim's lease end: there it stalls.
      const { returned, threadMoved } = stalledHolder(handle, clock, control, { reading: 3, advanceMillis: 0 }, (holder) => holder.poll('holder', 60_000));
      expect(returned?.jobId).toBe(better);
      expect(threadMoved, "the thread's poll returned while the better job was off the heap and unclaimed").toBe(false);
      expect(await withTimeout(outcome, 10_000, "the thread's poll")).toEqual({ returned: worse });
    } finally {
      await terminateAll([thread]);
      queue.close();
    }
  });
});

describe('a lock-free call after a holder of an older time has let go', () => {
  // The call compared its clock with NEXT_DUE before the holder's lease was published; the holder let go before the
  // call's look at the lock, which then found it free. The history checker found a poll that passed over the job so.
  it('takes the lock when a lease that holder made has run out by its reading', () => {
    const clock = new ManualClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { lockTimeoutMillis: 10_000 });
    const memory = new QueueMemory(queue.share().buffers, 10_000);
    queue.submit('t', 'p');
    // This instance's first poll runs under the lock (its worker id is new): a holder at START, gone once it returns.
    expect(queue.poll('w', 9)).toMatchObject({ leaseUntil: START + 9 });
    expect(memory.lock.taken()).toBe(false);
    expect(memory.holderBehind(START + 5), 'before the lease ran out').toBe(false);
    expect(memory.holderBehind(START + 16), 'after the lease ran out').toBe(true);
    // And, as before, while a holder of an older time is at work.
    expect(memory.lock.acquire()).toBe(false);
    expect(memory.holderBehind(START + 5), 'a holder at work').toBe(true);
    memory.lock.release();
    queue.close();
  });
});
