import { InvalidArgumentError } from '../errors.js';
import { NAME_BYTES, TYPE_NAMES } from '../shm/core.js';
import { byType, type RateLimit, type TypeRateLimit } from '../types.js';
import { checkRateLimit } from '../validate/rate-limit.js';
import type { QueueContext } from './context.js';

/**
 * The rate limits of one JobQueue instance. The limits and each window's
 * count live in shared memory (see rate-limits.ts), so every attached
 * thread sees and obeys them; with a journal each limit is also a pair of
 * meta rows, so that it holds again after a reopen.
 */
export class RateLimiting {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /**
   * Sets `type`'s limit, or removes it (null), under the lock. The journal is
   * written first: if it refuses, nothing changed. Workers asleep in
   * waitForWork poll again (the held jobs were filed back).
   */
  set(type: string, limit: RateLimit | null): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const checked = checkRateLimit(type, limit);
    ctx.locked((core, now) => {
      // A limited type needs its entry in the type table: a claim finds the limit by the job's TYPE column.
      const typeNumber = ctx.memory.typeNames.numberOf(type);
      if (typeNumber === 0) {
        throw new InvalidArgumentError(
          `Expected \`type\` to be at most ${NAME_BYTES} UTF-8 bytes for a rate limit, and the queue to have fewer than ${TYPE_NAMES} types`,
        );
      }
      ctx.journal?.journal.setRateLimit(type, checked);
      core.setRateLimit(typeNumber, checked?.max ?? 0, checked?.windowMillis ?? 0, now);
    });
    ctx.memory.signal.bump();
  }

  /** Every type's limit, by type (see byType). */
  list(): TypeRateLimit[] {
    const ctx = this.#ctx;
    const limits = ctx.read(() =>
      ctx.memory.rateLimits.list().map(({ typeNumber, max, windowMillis }) => ({ type: ctx.memory.typeNames.nameOf(typeNumber)!, max, windowMillis })),
    );
    return limits.sort(byType);
  }
}
