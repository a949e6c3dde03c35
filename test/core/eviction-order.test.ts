import { describe, expect, it } from 'vitest';
import { JobNotFoundError, JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0 } from '../support/helpers.js';

const CAPACITY = 9;

/** Whether `id` was evicted: view rejects it as not found. */
function evicted(queue: JobQueue, id: string): boolean {
  try {
    queue.view(id);
    return false;
  } catch (error) {
    if (error instanceof JobNotFoundError) return true;
    throw error;
  }
}

/**
 * The finished order is kept in shared memory as a ring sorted by when each
 * job finished; most jobs are filed at its end. These tests make jobs come to
 * it out of order and across its wrap, and look at which jobs each submit of
 * a full queue evicts.
 */
describe('eviction order (memory backend)', () => {
  it('evicts oldest finished first when the lock-free completes of two instances are filed together', () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 100, 1_000), { capacity: CAPACITY });
    // Each instance has a row of its own: its lock-free completes wait in that row's ring, and the next
    // locked call files one row's after the other's, out of the order they finished in.
    const other = JobQueue.attach(queue.share());
    try {
      // Full of finished jobs: each submit from here on evicts one, and the first starts the eviction order.
      let expected: string[] = [];
      for (let i = 0; i < CAPACITY; i++) {
        const id = queue.submit('t', `p${i}`);
        const lease = queue.poll('w', 60_000)!;
        queue.complete(lease.jobId, lease.token);
        expected.push(id);
      }
      let next = CAPACITY + 1;
      // Rounds enough to wrap the order's ring (2 × capacity + 16 entries) several times.
      for (let round = 0; round < 8; round++) {
        const ids: string[] = [];
        while (ids.length < CAPACITY) {
          const id = queue.submit('t', `p${next}`, 0);
          expect(id).toBe(`J${next++}`);
          // Each submit evicts exactly the oldest finished job left.
          expect(evicted(queue, expected[0]!)).toBe(true);
          for (const later of expected.slice(1)) expect(evicted(queue, later)).toBe(false);
          expected = expected.slice(1);
          ids.push(id);
        }
        const tokens = new Map<string, number>();
        for (const _ of ids) {
          const lease = queue.poll('w', 60_000)!;
          tokens.set(lease.jobId, lease.token);
        }
        expect([...tokens.keys()].sort()).toEqual([...ids].sort());
        // Finished in an order that interleaves the instances: the second, the first, the fourth, the third, ...
        const finishOrder = ids.map((_, i) => ids[i % 2 === 0 ? Math.min(i + 1, ids.length - 1) : i - 1]!);
        finishOrder.forEach((id, i) => (i % 2 === 0 ? queue : other).complete(id, tokens.get(id)!));
        expected = finishOrder;
      }
      expect(queue.stats().succeeded).toBe(CAPACITY);
    } finally {
      other.close();
      queue.close();
    }
  });

  it('evicts oldest finished first at the first eviction, whatever the slots the jobs finished in', () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 100, 1_000), { capacity: CAPACITY });
    try {
      // Priorities make the jobs run, and finish, in the reverse of their slots' order; then in an order mixed further.
      const ids = Array.from({ length: CAPACITY }, (_, i) => queue.submit('t', `p${i}`, i));
      const finished: string[] = [];
      for (let lease = queue.poll('w', 60_000); lease !== undefined; lease = queue.poll('w', 60_000)) {
        queue.complete(lease.jobId, lease.token);
        finished.push(lease.jobId);
      }
      expect(finished).toEqual([...ids].reverse());
      for (let i = 0; i < CAPACITY; i++) {
        queue.submit('t', 'new');
        expect(finished.map((id) => evicted(queue, id))).toEqual(finished.map((_, j) => j <= i));
      }
    } finally {
      queue.close();
    }
  });
});
