/**
 * A handler's way to hand its job back for later without spending an
 * attempt (Oban's `{:snooze, seconds}`, River's JobSnooze): `return
 * snooze(60_000)`. The pool thread then releases the lease with that delay
 * (`release(jobId, token, { delayMillis })`) instead of completing the job.
 *
 * The marker is plain data with a string brand, not a class: a handler module
 * may import leasehold from another copy of the package than the pool's, and
 * `instanceof` would not see it.
 */
import { checkSpan } from '../validate/numbers.js';

/** What `snooze(ms)` returns, for a handler to return. */
export interface Snooze {
  readonly kind: 'leasehold/snooze';
  /** How long after the release the job is ready again. */
  readonly delayMillis: number;
}

/**
 * Returned by a pool handler: the job goes back PENDING, ready `delayMillis`
 * from now, and the attempt is not counted. A bad delay throws
 * InvalidArgumentError where `snooze` is called (so the attempt fails).
 */
export function snooze(delayMillis: number): Snooze {
  checkSpan('delayMillis', delayMillis);
  return Object.freeze({ kind: 'leasehold/snooze', delayMillis });
}

/** The delay of a handler's result that is a snooze, else undefined (read without throwing: a result may be a proxy). */
export function snoozeDelayOf(result: unknown): number | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  try {
    const { kind, delayMillis } = result as Partial<Snooze>;
    return kind === 'leasehold/snooze' && typeof delayMillis === 'number' ? delayMillis : undefined;
  } catch {
    return undefined;
  }
}
