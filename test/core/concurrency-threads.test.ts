import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const PARTIES = 4;
/** Leases one thread holds at most: PARTIES × HOLD is well above every cap below. */
const HOLD = 3;
const TYPES = ['email', 'resize'];

interface Caps {
  queue: number | null;
  email: number | null;
  resize: number | null;
}

/**
 * PARTIES threads claim at once, each holding up to HOLD leases, and count
 * every lease in shared counters right after its claim: the maximum each
 * counter reached is at most the jobs RUNNING at some instant, so a claim
 * past a cap fails the test. Every job ends SUCCEEDED, each claim is counted.
 */
async function raceThreads(queue: JobQueue, caps: Caps, jobs: number): Promise<number[]> {
  if (caps.queue !== null) queue.setConcurrency(caps.queue);
  if (caps.email !== null) queue.setConcurrency('email', caps.email);
  if (caps.resize !== null) queue.setConcurrency('resize', caps.resize);
  for (let i = 0; i < jobs; i++) queue.submit(TYPES[i % 2]!, `j${i}`, i % 3);
  const counters = new SharedArrayBuffer((2 * (TYPES.length + 1) + 1) * Int32Array.BYTES_PER_ELEMENT);
  const workers: RunningWorker[] = [];
  try {
    for (let index = 0; index < PARTIES; index++) {
      workers.push(await startWorker('concurrency-thread.mjs', { handle: queue.share(), index, hold: HOLD, total: jobs, counters, types: TYPES }));
    }
    const claims = (await withTimeout(Promise.all(workers.map((w) => w.result)), 120_000, 'the claiming threads')) as number[];
    const words = new Int32Array(counters);
    expect(claims.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(jobs);
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: jobs });
    // [max of the queue, of email, of resize]
    return [words[1]!, words[3]!, words[5]!];
  } finally {
    await terminateAll(workers);
  }
}

const JOBS = 600;

describe('concurrency caps across threads', () => {
  for (const journaled of [false, true]) {
    const make = () => {
      const clock = new ManualClock(T0);
      const policy = new RetryPolicy(5, 0, 0);
      return journaled ? { queue: openJournal(tempJournal(), clock, policy), close: (q: JobQueue) => closeJournal(q) } : { queue: new JobQueue(clock, policy), close: (q: JobQueue) => q.close() };
    };
    const name = journaled ? 'journaled' : 'in memory';

    it(`${name}: threads racing to claim never run more than the queue's cap, and reach it`, async () => {
      const { queue, close } = make();
      const [all] = await raceThreads(queue, { queue: 3, email: null, resize: null }, journaled ? 150 : JOBS);
      expect(all).toBe(3);
      close(queue);
    });

    it(`${name}: threads racing to claim never run more of a type than its cap, and other types go on`, async () => {
      const { queue, close } = make();
      const [all, email, resize] = await raceThreads(queue, { queue: null, email: 2, resize: null }, journaled ? 150 : JOBS);
      expect(email).toBe(2);
      // Not held back by email's cap: the threads hold more than 2 at once.
      expect(resize).toBeGreaterThan(2);
      expect(all).toBeGreaterThan(2);
      close(queue);
    });

    it(`${name}: a queue cap and type caps hold together`, async () => {
      const { queue, close } = make();
      const [all, email, resize] = await raceThreads(queue, { queue: 4, email: 1, resize: 3 }, journaled ? 150 : JOBS);
      expect(all).toBeLessThanOrEqual(4);
      expect(email).toBe(1);
      expect(resize).toBe(3);
      close(queue);
    });
  }
});
