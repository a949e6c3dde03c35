/**
 * The arguments of the edits of a PENDING job (changeDelay, updatePayload;
 * changePriority's is submit's checkPriority) and of release's options (a
 * snooze), shared by every backend: a bad argument is refused with
 * InvalidArgumentError before anything changes.
 */
import { readOptions } from '../options.js';
import { checkPayloadBytes } from './job-input.js';
import type { Payload } from '../types.js';

/** A payload checked: the string or bytes, and its byte length (UTF-8 for a string). */
export interface CheckedPayload {
  value: Payload;
  bytes: number;
}
import { checkSpan } from './numbers.js';

/** A job's new runAt, as a delay after now: a span, 0 to 2^53 - 1. */
export function checkDelay(delayMillis: unknown): asserts delayMillis is number {
  checkSpan('delayMillis', delayMillis);
}

/** A job's new payload, as submit takes it (null and undefined are ''): the payload and its bytes. */
export function checkPayload(payload: unknown, maxPayloadBytes: number): CheckedPayload {
  const given = payload ?? '';
  return { bytes: checkPayloadBytes(given, maxPayloadBytes), value: given as Payload };
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
