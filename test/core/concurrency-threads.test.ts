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
      workers.push(await startWorker('cap-racer-thread.mjs', { handle: queue.share(), index, hold: HOLD, total: jobs, counters, types: TYPES }));
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

/**
 * After the race, in this thread alone (no timing involved): submits jobs of `types`, polls until a poll
 * finds nothing it may claim, and returns the leases per type — what the caps admit at once. Reaching a cap
 * exactly is checked here; the race above checks that no claim ever passes one.
 */
function admitted(queue: JobQueue, types: string[]): Record<string, number> {
  for (const type of types) queue.submit(type, 'after the race');
  const leases = [];
  for (let lease = queue.poll('main', 600_000); lease !== undefined && leases.length <= types.length; lease = queue.poll('main', 600_000)) leases.push(lease);
  const counts: Record<string, number> = {};
  for (const lease of leases) counts[lease.type] = (counts[lease.type] ?? 0) + 1;
  for (const lease of leases) queue.complete(lease.jobId, lease.token);
  return counts;
}

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
      expect(all).toBeLessThanOrEqual(3);
      expect(admitted(queue, ['email', 'resize', 'email', 'resize', 'email'])).toEqual({ email: 2, resize: 1 });
      close(queue);
    });

    it(`${name}: threads racing to claim never run more of a type than its cap, and other types go on`, async () => {
      const { queue, close } = make();
      const [, email] = await raceThreads(queue, { queue: null, email: 2, resize: null }, journaled ? 150 : JOBS);
      expect(email).toBeLessThanOrEqual(2);
      // Not held back by email's cap: every resize job is admitted beside the two emails.
      expect(admitted(queue, ['email', 'email', 'email', 'resize', 'resize', 'resize'])).toEqual({ email: 2, resize: 3 });
      close(queue);
    });

    it(`${name}: a queue cap and type caps hold together`, async () => {
      const { queue, close } = make();
      const [all, email, resize] = await raceThreads(queue, { queue: 4, email: 1, resize: 3 }, journaled ? 150 : JOBS);
      expect(all).toBeLessThanOrEqual(4);
      expect(email).toBeLessThanOrEqual(1);
      expect(resize).toBeLessThanOrEqual(3);
      expect(admitted(queue, ['email', 'email', 'resize', 'resize', 'resize', 'resize'])).toEqual({ email: 1, resize: 3 });
      close(queue);
    });
  }
});
