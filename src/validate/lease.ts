/** What a worker says of its lease: who it is, how long the lease runs, how many jobs one batch takes. */
import { InvalidArgumentError, describe } from '../errors.js';
import { checkSpan } from './numbers.js';

export function checkWorkerId(workerId: unknown): asserts workerId is string {
  if (typeof workerId !== 'string' || workerId.trim() === '') {
    throw new InvalidArgumentError(`Expected \`workerId\` to be a non-blank string, got ${describe(workerId)}`);
  }
}

/** The threadId of a thread that has exited: a positive integer (the main thread, 0, cannot have), and not the caller's own. */
export function checkExitedThread(exited: unknown, own: number): asserts exited is number {
  if (typeof exited !== 'number' || !Number.isSafeInteger(exited) || exited < 1) {
    throw new InvalidArgumentError(`Expected \`threadId\` to be the threadId of a worker thread that exited (an integer >= 1), got ${describe(exited)}`);
  }
  if (exited === own) throw new InvalidArgumentError(`threadId ${exited} is the calling thread's own: it has not exited`);
}

export function checkLeaseMillis(leaseMillis: unknown): asserts leaseMillis is number {
  checkSpan('leaseMillis', leaseMillis, true);
}

/** The most jobs one batched Redis call (pollMany, completeManyAndPoll) leases or completes: it bounds a script's length. */
export const MAX_BATCH = 1000;
