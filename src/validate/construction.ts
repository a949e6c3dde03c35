/** What a queue is built with: its name and its retry policy (its TimeSource: clock.ts). */
import { InvalidArgumentError, describe } from '../errors.js';
import { readCallers } from '../options.js';
import { RetryPolicy } from '../policy.js';

export function checkPolicy(policy: unknown): asserts policy is RetryPolicy {
  if (!readCallers('policy', () => policy instanceof RetryPolicy)) {
    throw new InvalidArgumentError(`Expected \`policy\` to be a RetryPolicy, got ${describe(policy)}`);
  }
}

/** Longest queue name, in UTF-8 bytes. */
export const MAX_QUEUE_NAME_BYTES = 256;

/**
 * A queue name shared by the processes that use one queue: non-blank, at most
 * MAX_QUEUE_NAME_BYTES, without braces (a Redis backend wraps it in a hash tag).
 */
export function checkQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.trim() === '' || /[{}]/.test(name) || !name.isWellFormed() ||
      Buffer.byteLength(name) > MAX_QUEUE_NAME_BYTES) {
    throw new InvalidArgumentError(
      `Expected \`name\` to be a non-blank string of at most ${MAX_QUEUE_NAME_BYTES} UTF-8 bytes without { or }, got ${describe(name)}`,
    );
  }
}
