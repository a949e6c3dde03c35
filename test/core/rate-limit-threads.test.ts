import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

interface Leased {
  round: number;
  jobId: string;
  type: string;
  token: number;
  attempt: number;
}

const PARTIES = 4;
const MAX = 5;
const ROUNDS = 12;
const WINDOW = 1_000;
const OTHERS = 40;

/**
 * PARTIES threads poll `queue` at once, round after round, one window per
 * round: MAX × ROUNDS limited jobs and OTHERS unlimited ones. Every lease is
 * checked: each job leased once, with a token of its own; exactly MAX
 * limited leases per window, the limited jobs in submission order window by
 * window; the unlimited jobs all in the first window, not held up.
 */
async function raceThreads(queue: JobQueue, clock: ManualClock): Promise<void> {
  queue.setRateLimit('email', { max: MAX, windowMillis: WINDOW });
  const emails = Array.from({ length: MAX * ROUNDS }, (_, i) => queue.submit('email', `e${i}`));
  const others = Array.from({ length: OTHERS }, (_, i) => queue.submit('resize', `r${i}`));
  const controlBuffer = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  const workers: RunningWorker[] = [];
  try {
    for (let index = 0; index < PARTIES; index++) {
      workers.push(await startWorker('rate-limit-thread.mjs', {
        handle: queue.share(), index, parties: PARTIES, rounds: ROUNDS, windowMillis: WINDOW, clockBuffer: clock.buffer, controlBuffer,
      }));
    }
    const leases = ((await withTimeout(Promise.all(workers.map((w) => w.result)), 60_000, 'the polling threads')) as Leased[][]).flat();
    expect(leases.map((l) => l.jobId).sort()).toEqual([...emails, ...others].sort());
    expect(new Set(leases.map((l) => l.token)).size).toBe(leases.length);
    expect(leases.every((l) => l.attempt === 1)).toBe(true);
    for (let round = 0; round < ROUNDS; round++) {
      const leasedEmails = leases.filter((l) => l.round === round && l.type === 'email').map((l) => l.jobId);
      expect(leasedEmails.sort(), `round ${round}`).toEqual(emails.slice(round * MAX, (round + 1) * MAX).sort());
    }
    expect(leases.filter((l) => l.type === 'resize').every((l) => l.round === 0)).toBe(true);
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: MAX * ROUNDS + OTHERS });
  } finally {
    await terminateAll(workers);
  }
}

describe('rate limits across threads', () => {
  it('in memory: threads polling a limited type at once get exactly max leases per window', async () => {
    const clock = new ManualClock(T0);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    await raceThreads(queue, clock);
    queue.close();
  });

  it('journaled: threads polling a limited type at once get exactly max leases per window', async () => {
    const clock = new ManualClock(T0);
    const queue = openJournal(tempJournal(), clock, new RetryPolicy(3, 0, 0));
    await raceThreads(queue, clock);
    closeJournal(queue);
  });
});

describe('rate limits in shared memory', () => {
  it('are seen and obeyed by a thread that attaches, and set by it for all', () => {
    const clock = new ManualClock(T0);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    const other = JobQueue.attach(queue.share());
    expect(other.rateLimits()).toEqual([{ type: 'email', max: 1, windowMillis: WINDOW }]);
    const [a, b] = [queue.submit('email'), queue.submit('email')];
    expect(other.poll('w2', 1_000)?.jobId).toBe(a);
    expect(queue.poll('w1', 1_000)).toBeUndefined();
    other.setRateLimit('email', null);
    expect(queue.rateLimits()).toEqual([]);
    expect(queue.poll('w1', 1_000)?.jobId).toBe(b);
    other.close();
    queue.close();
  });

  it('refuse a type too long for the type table, and change nothing', () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0));
    expect(() => queue.setRateLimit('x'.repeat(125), { max: 1, windowMillis: WINDOW })).toThrow(/at most 124 UTF-8 bytes/);
    expect(queue.rateLimits()).toEqual([]);
    queue.close();
  });

  it('waitForWork after a poll that passed over limited jobs sleeps only until their window opens', async () => {
    const clock = new ManualClock(T0);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    queue.submit('email');
    queue.submit('email');
    expect(queue.poll('w1', 60_000)).toBeDefined();
    // The window opens 20 ms (of the clock) from now: the wait ends then, not after its 60 s timeout.
    clock.advance(WINDOW - 20);
    expect(queue.poll('w1', 60_000)).toBeUndefined();
    expect(await withTimeout(queue.waitForWork(60_000), 10_000, 'waitForWork')).toBe(true);
    clock.advance(20);
    expect(queue.poll('w1', 60_000)).toBeDefined();
    queue.close();
  });
});

describe('rate limits of a journaled queue', () => {
  it('hold across close and reopen, and stay removed after a removal and reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, new RetryPolicy(3, 0, 0));
    queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    queue.setRateLimit('sms', { max: 7, windowMillis: 60_000 });
    const [a, b] = [queue.submit('email'), queue.submit('email')];
    closeJournal(queue);
    queue = openJournal(path, clock, new RetryPolicy(3, 0, 0));
    expect(queue.rateLimits().sort((x, y) => x.type.localeCompare(y.type))).toEqual([
      { type: 'email', max: 1, windowMillis: WINDOW }, { type: 'sms', max: 7, windowMillis: 60_000 },
    ]);
    const lease = queue.poll('w1', 60_000);
    expect(lease?.jobId).toBe(a);
    queue.complete(a, lease!.token);
    expect(queue.poll('w1', 60_000)).toBeUndefined();
    queue.setRateLimit('email', null);
    closeJournal(queue);
    queue = openJournal(path, clock, new RetryPolicy(3, 0, 0));
    expect(queue.rateLimits()).toEqual([{ type: 'sms', max: 7, windowMillis: 60_000 }]);
    expect(queue.poll('w1', 60_000)?.jobId).toBe(b);
    closeJournal(queue);
  });
});
