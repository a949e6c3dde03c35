/** Job ids: `J<n>`, read back into the job's number. */
import { JobNotFoundError, describe } from '../errors.js';

/** Digits of an id's number at most ("J" and up to 16 digits, no leading zero). */
const JOB_ID_DIGITS = 16;
const CODE_J = 0x4a;
const CODE_0 = 0x30;

/** The job number of an id `J<n>`; anything else is an id no job has. */
export function parseJobId(jobId: unknown): number {
  const n = typeof jobId === 'string' ? jobNumberOf(jobId) : MALFORMED;
  if (n === MALFORMED) throw new JobNotFoundError(`No job with id ${describe(jobId)}: ids look like "J1"`);
  if (!Number.isSafeInteger(n)) throw new JobNotFoundError(`No job with id ${describe(jobId)}`);
  return n;
}

const MALFORMED = -1;

/**
 * The n of `J<n>` (1 to 16 digits, no leading zero), or MALFORMED; read
 * digit by digit, as it runs on every complete: cheaper than a RegExp and a
 * slice. Beyond 2^53 the sum is inexact, and no longer a safe integer.
 */
function jobNumberOf(id: string): number {
  const length = id.length;
  if (length < 2 || length > 1 + JOB_ID_DIGITS || id.charCodeAt(0) !== CODE_J || id.charCodeAt(1) === CODE_0) return MALFORMED;
  let n = 0;
  for (let i = 1; i < length; i++) {
    const digit = id.charCodeAt(i) - CODE_0;
    if (!(digit >= 0 && digit <= 9)) return MALFORMED;
    n = n * 10 + digit;
  }
  return n;
}
