/** `setRetryPolicy`'s arguments. */
import { InvalidArgumentError, describe } from '../errors.js';
import { RetryPolicy } from '../policy.js';
import { MAX_ATTEMPTS } from '../shm/memory/layout.js';
import { checkType } from './job-input.js';

/**
 * The arguments of `setRetryPolicy(type, policy)`: the policy, or null to
 * remove the type's. Its maxAttempts becomes the own attempts of the jobs
 * submitted while it is set, so it is bounded as submit's `maxAttempts` is.
 */
export function checkRetryPolicy(type: unknown, policy: unknown): RetryPolicy | null {
  checkType(type);
  if (policy === null) return null;
  if (!(policy instanceof RetryPolicy)) {
    throw new InvalidArgumentError(`Expected \`policy\` to be a RetryPolicy or null, got ${describe(policy)}`);
  }
  if (policy.maxAttempts > MAX_ATTEMPTS) {
    throw new InvalidArgumentError(`Expected a job type's \`maxAttempts\` to be at most ${MAX_ATTEMPTS}, got ${policy.maxAttempts}`);
  }
  return policy;
}
