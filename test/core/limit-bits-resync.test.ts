/**
 * A cap or a rate limit sends every poll to the lock by its ATTENTION bit
 * (CAPPED, RATE_LIMITED), which its set raises last, after the limit itself
 * and the count of limits. A holder killed in between leaves a limit that is
 * listed but that no lock-free poll sees: every poll after would claim past
 * it for good. The successor's rebuild (a takeover) makes the bits agree with
 * the limits again (ConcurrencyTable#resync, RateLimitTable#resync).
 *
 * The killed holder is played by clearing the bit its set raised, on the
 * queue's own memory; the takeover's rebuild is the built internals' (the
 * documented seam, src/testing/core-internals.ts). test/scheduled/kills.test.ts
 * kills real threads inside setGroupConcurrency at every step.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { ATTENTION, CAPPED, QueueMemory, RATE_LIMITED, maintenanceOf } from '../../dist/testing/core-internals.js';

const START = 1_767_225_600_000;
const LEASE_MILLIS = 30_000;

const LIMITS = [
  { limit: 'a group cap of 1', bit: CAPPED, set: (queue: JobQueue) => queue.setGroupConcurrency('g', 1) },
  { limit: 'a queue cap of 1', bit: CAPPED, set: (queue: JobQueue) => queue.setConcurrency(1) },
  { limit: 'a type rate limit of 1 a minute', bit: RATE_LIMITED, set: (queue: JobQueue) => queue.setRateLimit('t', { max: 1, windowMillis: 60_000 }) },
];

describe.each(LIMITS)('$limit whose holder died before raising its bit', ({ bit, set }) => {
  it('holds again from the successor’s rebuild on: one lease, then none', () => {
    const clock = new ManualClock(START);
    const policy = new RetryPolicy(3, 0, 0);
    const queue = new JobQueue(clock, policy, { lockTimeoutMillis: 20 });
    try {
      for (let i = 0; i < 3; i++) queue.submit('t', `p${i}`, { group: 'g' });
      set(queue);
      const memory = new QueueMemory(queue.share().buffers, 20);
      const words = memory.lockWords;
      expect(Atomics.load(words, ATTENTION) & bit, 'raised by the set').toBe(bit);
      // The holder died after writing the limit and the count of limits, before its last step.
      Atomics.and(words, ATTENTION, ~bit);

      memory.lock.acquire();
      maintenanceOf(memory, policy, clock).rebuild(clock.now());
      memory.lock.release();

      expect(Atomics.load(words, ATTENTION) & bit, 'raised again by the rebuild').toBe(bit);
      expect(queue.poll('w', LEASE_MILLIS), 'the one the limit lets start').toBeDefined();
      expect(queue.poll('w', LEASE_MILLIS), 'held back by the limit').toBeUndefined();
      expect(queue.stats()).toMatchObject({ running: 1 });
    } finally {
      queue.close();
    }
  });
});
