import { InvalidArgumentError, describe } from './errors.js';
import { MAX_SPAN_MILLIS, given, readOptions } from './options.js';

/** How a retry delay is spread: not at all, over `[0, d]`, or over `[d/2, d]`. */
export type Jitter = 'none' | 'full' | 'equal';
/** The jitters in a fixed order: a policy's jitter is shared (memory, Redis) as its index here. */
export const JITTERS: readonly Jitter[] = ['none', 'full', 'equal'];
const POLICY_OPTIONS: ReadonlySet<string> = new Set(['jitter']);

export interface RetryPolicyOptions {
  /**
   * Spreads retries of jobs that failed together, so they do not all come back at once.
   * @default 'none'
   */
  jitter?: Jitter;
}

/**
 * How often a job is tried and how long it waits between attempts. After the
 * n-th failed attempt the job waits `min(maxBackoff, base * 2^(n-1))`
 * (before jitter); after `maxAttempts` attempts it is dead-lettered.
 */
export class RetryPolicy {
  readonly maxAttempts: number;
  readonly baseBackoffMillis: number;
  readonly maxBackoffMillis: number;
  readonly jitter: Jitter;

  constructor(maxAttempts: number, baseBackoffMillis: number, maxBackoffMillis: number, options: RetryPolicyOptions = {}) {
    if (!Number.isInteger(maxAttempts) || !(maxAttempts >= 1)) {
      throw new InvalidArgumentError(`Expected \`maxAttempts\` to be an integer >= 1, got ${describe(maxAttempts)}`);
    }
    assertMillis('baseBackoffMillis', baseBackoffMillis);
    assertMillis('maxBackoffMillis', maxBackoffMillis);
    if (maxBackoffMillis < baseBackoffMillis) {
      throw new InvalidArgumentError(
        `Expected \`maxBackoffMillis\` (${maxBackoffMillis}) to be >= \`baseBackoffMillis\` (${baseBackoffMillis})`,
      );
    }
    const jitter = given(readOptions<RetryPolicyOptions>('options', options, POLICY_OPTIONS).jitter, 'none');
    if (!JITTERS.includes(jitter)) {
      throw new InvalidArgumentError(`Expected \`jitter\` to be one of 'none', 'full', 'equal', got ${describe(jitter)}`);
    }
    this.maxAttempts = maxAttempts;
    this.baseBackoffMillis = baseBackoffMillis;
    this.maxBackoffMillis = maxBackoffMillis;
    this.jitter = jitter;
    Object.freeze(this);
  }

  /** The delay after the `attempt`-th failed attempt (1 is the first). */
  backoffAfter(attempt: number): number {
    if (!Number.isInteger(attempt) || !(attempt >= 1)) {
      throw new InvalidArgumentError(`Expected \`attempt\` to be an integer >= 1, got ${describe(attempt)}`);
    }
    const delay = this.#cappedDelay(attempt);
    switch (this.jitter) {
      case 'none':
        return delay;
      case 'full':
        return Math.floor(Math.random() * (delay + 1));
      case 'equal': {
        const half = Math.ceil(delay / 2);
        return half + Math.floor(Math.random() * (delay - half + 1));
      }
    }
  }

  #cappedDelay(attempt: number): number {
    const base = this.baseBackoffMillis;
    if (base === 0) return 0;
    // 2^(attempt-1) overflows to Infinity past 1023; stop doubling once past the cap.
    const exponent = attempt - 1;
    if (exponent >= 64) return this.maxBackoffMillis;
    return Math.min(this.maxBackoffMillis, base * 2 ** exponent);
  }
}

function assertMillis(name: string, value: number): void {
  if (!Number.isInteger(value) || !(value >= 0) || !(value <= MAX_SPAN_MILLIS)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an integer >= 0 and at most 2^53 - 1, got ${describe(value)}`);
  }
}

/** A policy as a handle carries it to another thread. */
export interface SharedPolicy {
  maxAttempts: number;
  baseBackoffMillis: number;
  maxBackoffMillis: number;
  jitter: Jitter;
}

export function sharePolicy(p: RetryPolicy): SharedPolicy {
  return { maxAttempts: p.maxAttempts, baseBackoffMillis: p.baseBackoffMillis, maxBackoffMillis: p.maxBackoffMillis, jitter: p.jitter };
}

/** The policy a handle carries; checks it as any policy is checked. */
export function policyFromShare(p: SharedPolicy): RetryPolicy {
  return new RetryPolicy(p.maxAttempts, p.baseBackoffMillis, p.maxBackoffMillis, { jitter: p.jitter });
}
