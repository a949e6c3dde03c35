/**
 * The arguments of the edits of a PENDING job (changePriority, changeDelay,
 * updatePayload) and of release's options (a snooze), shared by every
 * backend: a bad argument is refused with InvalidArgumentError before
 * anything changes.
 */
import { InvalidArgumentError, describe } from '../errors.js';
import { readOptions } from '../options.js';
import { checkSpan } from './numbers.js';

/** A job's new priority: an integer, as submit takes it. */
export function checkPriority(priority: unknown): asserts priority is number {
  if (typeof priority !== 'number' || !Number.isInteger(priority)) {
    throw new InvalidArgumentError(`Expected \`priority\` to be an integer, got ${describe(priority)}`);
  }
}

/** A job's new runAt, as a delay after now: a span, 0 to 2^53 - 1. */
export function checkDelay(delayMillis: unknown): asserts delayMillis is number {
  checkSpan('delayMillis', delayMillis);
}

/** A job's new payload, as submit takes it (null and undefined are ''): its text and UTF-8 bytes. */
export function checkPayload(payload: unknown, maxPayloadBytes: number): { text: string; bytes: number } {
  const text = payload ?? '';
  if (typeof text !== 'string' || !text.isWellFormed()) {
    throw new InvalidArgumentError(`Expected \`payload\` to be a well-formed string, null or undefined, got ${describe(payload)}`);
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > maxPayloadBytes) {
    throw new InvalidArgumentError(`Expected \`payload\` to be at most ${maxPayloadBytes} UTF-8 bytes (maxPayloadBytes), got ${bytes}`);
  }
  return { text, bytes };
}

/** `release`'s options. */
export interface ReleaseOptions {
  /**
   * Hands the job back delayed (a snooze): ready this many milliseconds
   * after the release, the attempt still not counted. @default 0 (ready now)
   */
  delayMillis?: number;
}

const RELEASE_OPTIONS: ReadonlySet<string> = new Set(['delayMillis']);

/** `release`'s options, checked: the delay before the job is ready again (0: at once). */
export function checkReleaseOptions(options: unknown): number {
  if (options === undefined) return 0;
  const { delayMillis = 0 } = readOptions<ReleaseOptions>('options', options, RELEASE_OPTIONS);
  checkSpan('delayMillis', delayMillis);
  return delayMillis;
}
