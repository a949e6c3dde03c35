import { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, systemClock } from '../../dist/index.js';

/**
 * A queue's memory grows as jobs arrive, and a thread attached while it was
 * small sees every growth: a consumer thread attaches to an empty queue, then
 * the main thread submits jobs of many priorities, lengths and runAts (past
 * the slot table's first slots, the arena's first bytes, one level ring, the
 * overflow heap's first entries) while the consumer polls and completes them.
 */
const SUBMITTED = 0;
const ATTACHED = 1;
/** Jobs submitted before the consumer starts polling. */
const START = 2000;

describe('memory that grows with use, across threads', () => {
  it('lets a thread attached to an empty queue take every job submitted after, as every buffer grows', async () => {
    const jobs = 6000;
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0), { capacity: 65_536 });
    const handle = queue.share();
    const before = Object.fromEntries(Object.entries(handle.buffers).map(([name, buffer]) => [name, buffer.byteLength]));
    const control = new SharedArrayBuffer(8);
    const ctl = new Int32Array(control);
    const worker = new Worker(new URL('../fixtures/growth-consumer.mjs', import.meta.url), { workerData: { handle, control, jobs, start: START, SUBMITTED, ATTACHED } });
    const done = once(worker, 'message');
    // Handshake: the consumer's views are made over the empty queue's buffers.
    while (Atomics.load(ctl, ATTACHED) === 0) Atomics.wait(ctl, ATTACHED, 0);
    const now = Date.now();
    for (let n = 0; n < jobs; n++) {
      // The first ones each earlier than the last (the overflow heap takes them, the consumer not polling yet), then in order.
      const runAt = n < START ? now - 10_000_000 - n : now - jobs + n;
      queue.submit(`type-${n % 7}`, `${n}:${'x'.repeat(n % 300)}`, { priority: n % 7, runAt });
      Atomics.add(ctl, SUBMITTED, 1);
      Atomics.notify(ctl, SUBMITTED);
    }
    const [result] = (await done) as [{ taken: number; wrong: string[] }];
    await once(worker, 'exit');
    expect(result.wrong).toEqual([]);
    expect(result.taken).toBe(jobs);
    for (const name of ['slotWords', 'jobNums', 'arena', 'levelRings', 'overflow', 'rowRings'] as const) {
      expect(handle.buffers[name].byteLength, name).toBeGreaterThan(before[name]!);
    }
    expect(queue.queueDepth()).toBe(0);
    queue.close();
  });
});
