import type { RetainOptions } from '../../options.js';

/** The `retain` option's limits on finished jobs (`limits`) and on DEAD jobs (`deadLimits`), with Infinity for a limit left out. */
export class Retention {
  readonly maxFinished: number;
  readonly maxAgeMillis: number;
  /** Whether there is any limit (else the queue pays nothing for retention). */
  readonly limits: boolean;
  /** Whether finished jobs age out. */
  readonly ages: boolean;
  readonly maxDead: number;
  readonly maxDeadAgeMillis: number;
  /** Whether DEAD jobs have a limit (else they are never evicted, and the queue pays nothing for it). */
  readonly deadLimits: boolean;

  constructor(retain: RetainOptions) {
    this.maxFinished = retain.maxFinished ?? Infinity;
    this.maxAgeMillis = retain.maxAgeMillis ?? Infinity;
    this.ages = this.maxAgeMillis < Infinity;
    this.limits = this.ages || this.maxFinished < Infinity;
    this.maxDead = retain.maxDead ?? Infinity;
    this.maxDeadAgeMillis = retain.maxDeadAgeMillis ?? Infinity;
    this.deadLimits = this.maxDead < Infinity || this.maxDeadAgeMillis < Infinity;
  }

  /** When a job finished at `finishedAt` is due for eviction by age; Infinity without an age limit. */
  dueAt(finishedAt: number): number {
    return this.ages ? finishedAt + this.maxAgeMillis : Infinity;
  }
}
