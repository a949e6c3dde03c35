/** The demo's one job type: what a `thumbnail` job's payload (JSON) holds. */
import type { Fault } from './faults.js';

export const THUMBNAIL_JOB = 'thumbnail';

export interface ThumbnailPayload {
  /** Absolute path of the source PNG. */
  source: string;
  /** Absolute path the thumbnail is written to. */
  target: string;
  /** The thumbnail fits in maxSide × maxSide, aspect ratio kept. */
  maxSide: number;
  /** File the handler appends the job id to after each success. */
  successLog: string;
  /** The misbehaviour planned for this job (src/cli/faults.ts). */
  fault: Fault | 'none';
  /** For `transient`: attempts 1..failAttempts throw. */
  failAttempts: number;
  /** The pool's lease: `hang` and `stall` time their busy loops from it. */
  leaseMillis: number;
}
