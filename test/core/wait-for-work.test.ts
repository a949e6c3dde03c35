/**
 * waitForWork in a thread that has nothing else to do: the wait itself keeps
 * the thread alive until it times out or is woken (Node keeps no event loop
 * alive for a pending Atomics.waitAsync).
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { IDLE_WAITERS } from '../../dist/testing/core-internals.js';
import { withTimeout } from '../support/helpers.js';

function idleWaiter(queue: JobQueue, timeoutMillis: number): Promise<{ code: number; reports: unknown[] }> {
  const worker = new Worker(new URL('../fixtures/idle-waiter.mjs', import.meta.url), { workerData: { handle: queue.share(), timeoutMillis } });
  const reports: unknown[] = [];
  worker.on('message', (message) => reports.push(message));
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => resolve({ code, reports }));
  });
}

describe('waitForWork in an otherwise idle thread', () => {
  it('keeps the thread alive until it times out, then returns false', async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
    try {
      const { code, reports } = await withTimeout(idleWaiter(queue, 200), 10_000, 'the idle thread');
      expect({ code, reports }).toEqual({ code: 0, reports: [{ woken: false }] });
    } finally {
      queue.close();
    }
  });

  it.each([60_000, Infinity, 2 ** 31, 2 ** 53])('keeps the thread alive (waiting %s ms) until a submit of another thread wakes it, then returns true', async (timeoutMillis) => {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
    try {
      const ended = idleWaiter(queue, timeoutMillis);
      // The waiter counts itself idle (IDLE_WAITERS) before it sleeps: submit once it does, so that the
      // submit's bump is what wakes it.
      const lockWords = new Int32Array(queue.share().buffers.lockWords);
      const deadline = Date.now() + 10_000;
      while (Atomics.load(lockWords, IDLE_WAITERS) === 0) {
        if (Date.now() > deadline) throw new Error('the thread never went to sleep in waitForWork');
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      // Asleep a while first: a wait past the longest timer must not have ended at once (it kept nothing alive).
      await new Promise((resolve) => setTimeout(resolve, 300));
      queue.submit('t', 'p');
      const { code, reports } = await withTimeout(ended, 10_000, 'the idle thread');
      expect({ code, reports }).toEqual({ code: 0, reports: [{ woken: true }] });
    } finally {
      queue.close();
    }
  });
});
