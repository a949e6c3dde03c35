import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const PARTIES = 4;
/** Leases one thread holds at most: PARTIES × HOLD is well above every group cap below. */
const HOLD = 3;
/** The caps of groups g0, g1, g2; g3 has none. */
const CAPS = [1, 2, 3, null] as const;
const GROUPS = CAPS.length;

/**
 * PARTIES threads claim at once from a queue whose groups are capped, each
 * holding up to HOLD leases, and count every lease in its group's shared
 * counter right after its claim (and log the claim): the maximum a counter
 * reached is at most the group's jobs RUNNING at some instant, so a claim
 * past a cap fails the test. Returns the maximum per group.
 */
async function raceThreads(queue: JobQueue, jobs: number): Promise<number[]> {
  CAPS.forEach((max, group) => {
    if (max !== null) queue.setGroupConcurrency(`g${group}`, max);
  });
  const ids = new Map<number, number>();
  for (let i = 0; i < jobs; i++) {
    const group = i % GROUPS;
    ids.set(Number(queue.submit('work', String(group), { group: `g${group}`, priority: i % 3 }).slice(1)), group);
  }
  const counters = new SharedArrayBuffer((2 * GROUPS + 2) * Int32Array.BYTES_PER_ELEMENT);
  // Each job is claimed at most 3 times (its third attempt completes).
  const log = new SharedArrayBuffer(2 * 3 * jobs * Int32Array.BYTES_PER_ELEMENT);
  const workers: RunningWorker[] = [];
  try {
    for (let index = 0; index < PARTIES; index++) {
      workers.push(await startWorker('cap-racer-thread.mjs', { handle: queue.share(), index, hold: HOLD, total: jobs, groups: GROUPS, counters, log }));
    }
    const claims = (await withTimeout(Promise.all(workers.map((w) => w.result)), 120_000, 'the claiming threads')) as number[];
    const words = new Int32Array(counters);
    const logged = words[2 * GROUPS + 1]!;
    expect(logged).toBe(claims.reduce((a, b) => a + b, 0));
    // Every claim logged, each of a job of the group its payload names, and every job claimed.
    const entries = new Int32Array(log);
    const claimed = new Set<number>();
    for (let at = 0; at < logged; at++) {
      expect(ids.get(entries[2 * at]!)).toBe(entries[2 * at + 1]);
      claimed.add(entries[2 * at]!);
    }
    expect(claimed.size).toBe(jobs);
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: jobs });
    return Array.from({ length: GROUPS }, (_, group) => words[2 * group + 1]!);
  } finally {
    await terminateAll(workers);
  }
}

/**
 * After the race, in this thread alone: submits `each` jobs per group and polls until a poll finds
 * nothing it may claim; the leases per group, which show that each cap is reached exactly (its count
 * came back to zero) and that the uncapped group is not held back.
 */
function admitted(queue: JobQueue, each: number): number[] {
  for (let group = 0; group < GROUPS; group++) for (let i = 0; i < each; i++) queue.submit('work', String(group), { group: `g${group}` });
  const counts = new Array<number>(GROUPS).fill(0);
  const leases = [];
  for (let lease = queue.poll('main', 600_000); lease !== undefined; lease = queue.poll('main', 600_000)) {
    leases.push(lease);
    counts[Number(lease.payload)]!++;
  }
  for (const lease of leases) queue.complete(lease.jobId, lease.token);
  return counts;
}

/** Starts `parties` threads of `fixture` into `workers`, each given `data`, its index and one start line (lib.mjs's startLine) for all. */
async function startRacers(workers: RunningWorker[], fixture: string, parties: number, data: object): Promise<void> {
  const start = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  new Int32Array(start)[1] = parties;
  for (let index = 0; index < parties; index++) workers.push(await startWorker(fixture, { ...data, index, start }));
}

describe('group caps across threads', () => {
  for (const journaled of [false, true]) {
    const name = journaled ? 'journaled' : 'in memory';
    it(`${name}: threads racing to claim never run more of a group than its cap, and reach it`, async () => {
      const clock = new ManualClock(T0);
      const policy = new RetryPolicy(5, 0, 0);
      const queue = journaled ? openJournal(tempJournal(), clock, policy) : new JobQueue(clock, policy);
      const maxima = await raceThreads(queue, journaled ? 160 : 600);
      CAPS.forEach((max, group) => {
        if (max !== null) expect(maxima[group], `the most jobs of g${group} RUNNING at once`).toBeLessThanOrEqual(max);
      });
      expect(admitted(queue, 4)).toEqual([1, 2, 3, 4]);
      if (journaled) closeJournal(queue);
      else queue.close();
    });
  }
});

describe('fair turns across threads', () => {
  it('leases the 5 jobs of B, submitted after 1,000 of A, within the first 10 claims of 3 racing threads', async () => {
    const parties = 3;
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(5, 0, 0));
    queue.submitMany(Array.from({ length: 1_000 }, () => ({ type: 'work', payload: '0', group: 'A' })));
    queue.submitMany(Array.from({ length: 5 }, () => ({ type: 'work', payload: '1', group: 'B' })));
    const total = 1_005;
    const log = new SharedArrayBuffer((1 + total + parties) * Int32Array.BYTES_PER_ELEMENT);
    const workers: RunningWorker[] = [];
    try {
      await startRacers(workers, 'fair-turns-thread.mjs', parties, { handle: queue.share(), total, log });
      const claims = (await withTimeout(Promise.all(workers.map((w) => w.result)), 120_000, 'the polling threads')) as number[];
      expect(claims.reduce((a, b) => a + b, 0)).toBe(total);
      const entries = Array.from(new Int32Array(log).subarray(1, 1 + total));
      // Each of B's jobs by its place among its thread's own claims: no later than its place among all claims,
      // which for B's 5 is below 10 (claims are made one at a time under the lock, in turn order).
      const places = entries.flatMap((entry) => (entry % 2 === 1 ? [(entry - 1) / 2] : []));
      expect(places).toHaveLength(5);
      expect(Math.max(...places)).toBeLessThan(10);
      expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: total });
    } finally {
      await terminateAll(workers);
      queue.close();
    }
  });
});

describe('fair turns across threads, lock-free', () => {
  it('leases every job of groups without caps once, each thread in turn order, with the lock taken only for token blocks', async () => {
    const parties = 3;
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(5, 0, 0));
    // Round-robin over the groups that have jobs left: the turns go up with the submissions, so every job is in a ring.
    const counts = [600, 300, 150, 150];
    for (let round = 0; round < counts[0]!; round++) {
      counts.forEach((count, group) => {
        if (round < count) queue.submit('work', `${group}:${round}`, { group: `g${group}` });
      });
    }
    const total = counts.reduce((a, b) => a + b, 0);
    const done = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    const workers: RunningWorker[] = [];
    try {
      await startRacers(workers, 'turns-racer-thread.mjs', parties, { handle: queue.share(), total, done });
      type Claims = { claims: [number, number, number][]; takes: number };
      const results = (await withTimeout(Promise.all(workers.map((w) => w.result)), 120_000, 'the polling threads')) as Claims[];
      // Every job leased once.
      const jobs = results.flatMap((result) => result.claims.map(([job]) => job));
      expect(jobs).toHaveLength(total);
      expect(new Set(jobs).size).toBe(total);
      // Each thread's claims go round by round (its claims only move forward in the ring, which is in turn order):
      // no group's round r is claimed by a thread after its round r + 1 of any group.
      for (const { claims } of results) {
        const rounds = claims.map(([, , round]) => round);
        expect(rounds).toEqual([...rounds].sort((a, b) => a - b));
      }
      // Under the lock every poll would take it: lock-free, a thread takes it for a token block now and then,
      // and for its last polls, which find nothing.
      const takes = results.reduce((sum, result) => sum + result.takes, 0);
      expect(takes).toBeLessThan(total / 10);
      expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: total });
    } finally {
      await terminateAll(workers);
      queue.close();
    }
  });
});
