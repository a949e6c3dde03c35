import { InvalidArgumentError } from '../errors.js';
import type { RetryPolicy } from '../policy.js';
import { NAME_BYTES, TYPE_NAMES } from '../shm/core.js';
import { byType, type TypeRetryPolicy } from '../types.js';
import { checkRetryPolicy } from '../validate/retry-policy.js';
import type { QueueContext } from './context.js';

/**
 * The job types' own retry policies of one JobQueue instance. They live in
 * shared memory (see retry-policies.ts), so every attached thread retries a
 * type's jobs alike; with a journal each is also a set of meta rows, so that
 * it holds again after a reopen.
 */
export class RetryPolicies {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** Sets `type`'s policy, or removes it (null), under the lock. The journal is written first: if it refuses, nothing changed. */
  set(type: string, policy: RetryPolicy | null): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const checked = checkRetryPolicy(type, policy);
    ctx.locked(() => {
      // A type with a policy needs its entry in the type table: a failure finds the policy by the job's TYPE column.
      const typeNumber = ctx.memory.typeNames.numberOf(type);
      if (typeNumber === 0) {
        throw new InvalidArgumentError(
          `Expected \`type\` to be at most ${NAME_BYTES} UTF-8 bytes for a retry policy, and the queue to have fewer than ${TYPE_NAMES} types`,
        );
      }
      ctx.journal?.journal.setRetryPolicy(type, checked);
      ctx.memory.retryPolicies.set(typeNumber, checked);
    });
  }

  /** Every type's own policy, by type (see byType). */
  list(): TypeRetryPolicy[] {
    const ctx = this.#ctx;
    const policies = ctx.read(() =>
      ctx.memory.retryPolicies.list().map(({ typeNumber, policy }) => ({ type: ctx.memory.typeNames.nameOf(typeNumber)!, policy })),
    );
    return policies.sort(byType);
  }
}
