/**
 * The round of suite "single", in one place for the suite and for its child
 * process (fresh-queue-child.ts): JOBS jobs of a 64-byte payload submitted at
 * priority `i % PRIORITIES`, then polled and completed until none is left.
 */
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';

export const JOBS = 10_000;
export const PAYLOAD = 'p'.repeat(64);
export const PRIORITIES = 10;
export const LEASE_MILLIS = 30_000;

/** A queue for the round: room for one round's jobs, other options default. */
export function roundQueue(): JobQueue {
  return new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000), { capacity: JOBS });
}

/** Submits JOBS jobs, then polls and completes until nothing is left; notes a round that did not complete every job once. */
export function leaseholdRound(queue: JobQueue, notes: string[]): void {
  for (let i = 0; i < JOBS; i++) queue.submit('noop', PAYLOAD, i % PRIORITIES);
  let completed = 0;
  for (let lease = queue.poll('bench', LEASE_MILLIS); lease !== undefined; lease = queue.poll('bench', LEASE_MILLIS)) {
    queue.complete(lease.jobId, lease.token);
    completed++;
  }
  if (completed !== JOBS) notes.push(`a round completed ${completed} jobs, expected ${JOBS}`);
}
