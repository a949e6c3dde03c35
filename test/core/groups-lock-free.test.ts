/**
 * Fair turns without the lock (I27): a queue whose groups have no cap files
 * its ready jobs in the ready rings keyed by turn, so polls claim them
 * lock-free; only a job whose turn is below its ring's tail (a group that
 * arrives after another's burst) sends the polls to the lock, until it is
 * claimed. Lock takes are counted through the core's test door
 * (`lockTakesDuring`): each locked call, or lock-free one that fell back to
 * the lock, takes it once.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, type Lease } from '../../dist/index.js';
import { lockTakesDuring } from '../../dist/testing/core-internals.js';
import { T0 } from '../support/helpers.js';

const LEASE = 600_000;
/**
 * The turns a late group may be given below the round the claims made: the
 * round is read from its ring's shared head, which lags the claims by fewer
 * than HEAD_STEP (16, ready.ts) entries; of two groups taking turns, that is 8 turns.
 */
const LAG_TURNS = 8;

interface Variant {
  name: string;
  open(): JobQueue;
}

/** The queue as its own thread has it (exclusive: the same code, plain words), and as a thread attached to it has it. */
const VARIANTS: Variant[] = [
  { name: 'memory', open: () => new JobQueue(new ManualClock(T0), new RetryPolicy(5, 0, 0)) },
  { name: 'shared', open: () => JobQueue.attach(new JobQueue(new ManualClock(T0), new RetryPolicy(5, 0, 0)).share(), new ManualClock(T0)) },
];

/** Submits `counts[g]` jobs of group g (none: ungrouped) round-robin over the groups that have jobs left; payload `g:round`. */
function submitRounds(queue: JobQueue, counts: readonly number[], grouped = true): void {
  for (let round = 0; round < Math.max(...counts); round++) {
    counts.forEach((count, group) => {
      if (round < count) queue.submit('t', `${group}:${round}`, grouped ? { group: `g${group}` } : {});
    });
  }
}

/** Polls `count` times, completing each lease at once; the leases. */
function drain(queue: JobQueue, count: number): Lease[] {
  const leases: Lease[] = [];
  for (let i = 0; i < count; i++) {
    const lease = queue.poll('w', LEASE);
    if (lease === undefined) break;
    leases.push(lease);
    queue.complete(lease.jobId, lease.token);
  }
  return leases;
}

const groupOf = (lease: Lease) => Number((lease.payload as string).split(':')[0]);
const roundOf = (lease: Lease) => Number((lease.payload as string).split(':')[1]);

for (const variant of VARIANTS) {
  describe(`groups without caps [${variant.name}]`, () => {
    it('claim lock-free: no more lock takes than the same jobs without groups, and in turn order', () => {
      const counts = [300, 150, 75, 75];
      const total = counts.reduce((a, b) => a + b, 0);
      const plain = variant.open();
      submitRounds(plain, counts, false);
      const plainTakes = lockTakesDuring(() => expect(drain(plain, total)).toHaveLength(total));
      const queue = variant.open();
      submitRounds(queue, counts);
      let leases: Lease[] = [];
      const takes = lockTakesDuring(() => (leases = drain(queue, total)));
      expect(leases).toHaveLength(total);
      // Polls made under the lock would take it once each: `total` takes, where lock-free polls take it only for token blocks.
      expect(plainTakes).toBeLessThan(total / 10);
      expect(takes).toBeLessThanOrEqual(plainTakes);
      // One job per group per round: the rounds claimed never go back.
      const rounds = leases.map(roundOf);
      expect(rounds).toEqual([...rounds].sort((a, b) => a - b));
      expect(new Set(leases.map((lease) => lease.jobId)).size).toBe(total);
    });

    it(`serve a group that arrives after lock-free claims at most ${LAG_TURNS} turns early, and take the lock only until it is served`, () => {
      const queue = variant.open();
      submitRounds(queue, [600, 600]);
      expect(lockTakesDuring(() => expect(drain(queue, 301)).toHaveLength(301))).toBeLessThan(30);
      // Round 150 is being served (A's 151st job claimed, B's not yet). C's jobs take turns from the round its ring's head shows.
      for (let i = 0; i < 20; i++) queue.submit('t', `2:${i}`, { group: 'g2' });
      const next = drain(queue, 60);
      // Exact fair queuing serves C's first job after B's job of round 150 (C joins at round 151). C's jobs
      // served before then, and before A's and B's next rounds, are the turns the round read from the head lagged.
      const early = next.findIndex((lease) => groupOf(lease) !== 2 && roundOf(lease) > 150);
      const cBefore = next.slice(0, early).filter((lease) => groupOf(lease) === 2).length;
      expect(cBefore).toBeLessThanOrEqual(LAG_TURNS + 1);
      // Then one job per group per round again: every group is served in the 60 claims, C's 20 in order.
      expect(next.filter((lease) => groupOf(lease) === 2).map(roundOf)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      // C's jobs went to the overflow heap (below the ring's tail): polls took the lock until they were claimed, and not after.
      expect(lockTakesDuring(() => expect(drain(queue, 300)).toHaveLength(300))).toBeLessThan(30);
    });

    it('switch to locked claims while a group cap is set and back once it is cleared, every job leased once, turns kept', () => {
      const queue = variant.open();
      const counts = [100, 100, 100];
      submitRounds(queue, counts);
      queue.setGroupConcurrency('g0', 1);
      const held: Lease[] = [];
      // Under the cap every poll takes the lock; g0 has one job RUNNING (held), the others go on in turn.
      const cappedTakes = lockTakesDuring(() => {
        for (let i = 0; i < 40; i++) held.push(queue.poll('w', LEASE)!);
      });
      expect(cappedTakes).toBeGreaterThanOrEqual(40);
      expect(held.filter((lease) => groupOf(lease) === 0)).toHaveLength(1);
      queue.setGroupConcurrency('g0', null);
      for (const lease of held) queue.complete(lease.jobId, lease.token);
      let rest: Lease[] = [];
      const takes = lockTakesDuring(() => (rest = drain(queue, 300)));
      expect(rest).toHaveLength(260);
      const leased = [...held, ...rest].map((lease) => lease.jobId);
      expect(new Set(leased).size).toBe(300);
      expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 300 });
      // g0's jobs held back kept their turns (2 on), below every other group's next: filed back in the overflow heap,
      // they are served first, in a row, by locked polls.
      const g0First = rest.findIndex((lease) => groupOf(lease) !== 0);
      expect(rest.slice(0, g0First).map(roundOf)).toEqual(Array.from({ length: g0First }, (_, i) => i + 1));
      expect(g0First).toBeGreaterThanOrEqual(19);
      // Once they are out, lock-free: the 200-odd jobs after them took the lock only for token blocks.
      expect(takes - g0First).toBeLessThan(30);
    });
  });
}
