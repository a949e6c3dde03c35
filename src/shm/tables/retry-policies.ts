import { JITTERS, RetryPolicy } from '../../policy.js';
import {
  POLICY_BASE_BACKOFF, POLICY_JITTER, POLICY_MAX_ATTEMPTS, POLICY_MAX_BACKOFF, RETRY_POLICY_FIELDS, TYPE_NAME_COUNT,
} from '../memory/layout.js';

/** One type's policy as the table holds it: its `typeNames` number and the policy. */
export interface TypePolicy {
  readonly typeNumber: number;
  readonly policy: RetryPolicy;
}

/**
 * The RetryPolicy of each job type that has one of its own, in shared
 * memory (`retryPolicies` in layout.ts), so that every attached thread
 * retries a type's jobs alike.
 *
 * Concurrency contract: read and written only by the maintenance lock
 * holder (a submit resolves a job's attempts, a fail or an expiry its
 * backoff, all under the lock). A queue whose types have no policy reads
 * one zero per submit and per failure.
 */
export class RetryPolicyTable {
  readonly #table: Float64Array;
  readonly #header: Float64Array;
  /** This thread's RetryPolicy objects, by type number: made again only when the shared entry differs. */
  readonly #made = new Map<number, RetryPolicy>();

  constructor(table: Float64Array, header: Float64Array) {
    this.#table = table;
    this.#header = header;
  }

  /** Sets the policy of the type numbered `typeNumber` (its `typeNames` number), or removes it (null). */
  set(typeNumber: number, policy: RetryPolicy | null): void {
    const at = (typeNumber - 1) * RETRY_POLICY_FIELDS;
    const table = this.#table;
    table[at + POLICY_MAX_ATTEMPTS] = policy?.maxAttempts ?? 0;
    table[at + POLICY_BASE_BACKOFF] = policy?.baseBackoffMillis ?? 0;
    table[at + POLICY_MAX_BACKOFF] = policy?.maxBackoffMillis ?? 0;
    table[at + POLICY_JITTER] = policy === null ? 0 : JITTERS.indexOf(policy.jitter);
  }

  /** The policy of the type whose TYPE column holds `typeNumber`, or `fallback` (the queue's) if it has none. */
  of(typeNumber: number, fallback: RetryPolicy): RetryPolicy {
    return this.maxAttemptsOf(typeNumber) === 0 ? fallback : this.#own(typeNumber);
  }

  /** The type's own policy (it has one): the object made for it before, unless the shared entry changed since. */
  #own(typeNumber: number): RetryPolicy {
    const at = (typeNumber - 1) * RETRY_POLICY_FIELDS;
    const table = this.#table;
    const maxAttempts = table[at + POLICY_MAX_ATTEMPTS]!;
    const made = this.#made.get(typeNumber);
    const base = table[at + POLICY_BASE_BACKOFF]!;
    const max = table[at + POLICY_MAX_BACKOFF]!;
    const jitter = JITTERS[table[at + POLICY_JITTER]!]!;
    if (made !== undefined && made.maxAttempts === maxAttempts && made.baseBackoffMillis === base && made.maxBackoffMillis === max && made.jitter === jitter) {
      return made;
    }
    const policy = new RetryPolicy(maxAttempts, base, max, { jitter });
    this.#made.set(typeNumber, policy);
    return policy;
  }

  /** The maxAttempts of the type numbered `typeNumber`'s own policy; 0 if it has none. */
  maxAttemptsOf(typeNumber: number): number {
    // A type the table had no room for (TYPE < 0) has no entry, and so no policy.
    return typeNumber <= 0 ? 0 : this.#table[(typeNumber - 1) * RETRY_POLICY_FIELDS + POLICY_MAX_ATTEMPTS]!;
  }

  /** Every type's own policy, by type number. */
  list(): TypePolicy[] {
    const policies: TypePolicy[] = [];
    for (let typeNumber = 1, n = this.#header[TYPE_NAME_COUNT]!; typeNumber <= n; typeNumber++) {
      if (this.maxAttemptsOf(typeNumber) > 0) policies.push({ typeNumber, policy: this.#own(typeNumber) });
    }
    return policies;
  }
}
