import type { RetryPolicy } from './policy.js';

/**
 * Glossary
 *
 * - **job**: one unit of work: a type (which handler runs it), a payload (a string or bytes),
 *   a priority and the time it may first run (`runAt`). Ids are `J1`, `J2`, ...
 * - **slot**: the fixed place in shared memory that holds one job's state.
 * - **lease**: the right of one worker to run one job until `leaseUntil`. A lease
 *   is valid while `now < leaseUntil`; an expired lease counts as a failed attempt.
 * - **token**: the fencing number of one lease. Every successful poll makes a new
 *   one, never repeated; complete / fail / extend must present the current one,
 *   so a worker that lost its lease (a zombie) cannot touch the job again.
 * - **attempt**: one lease of a job. `attempts` counts them since submit (or
 *   since `retryDead`).
 * - **dead letter**: a job that failed `maxAttempts` times and waits, DEAD, for
 *   a person to look at it (`deadLetters`, `retryDead`).
 * - **flow**: a parent job submitted with its children (`submitFlow`), all or
 *   none. The parent stays PENDING, waiting, until each child has ended.
 */

export const JobStatus = Object.freeze({
  PENDING: 'PENDING',
  RUNNING: 'RUNNING',
  SUCCEEDED: 'SUCCEEDED',
  DEAD: 'DEAD',
  CANCELLED: 'CANCELLED',
} as const);
export type JobStatus = (typeof JobStatus)[keyof typeof JobStatus];

/**
 * A job's payload: text (kept as UTF-8, read back as a string) or bytes (a
 * Uint8Array, kept as given and read back as a Uint8Array). `submit` takes
 * either; a job reads back as what it was given.
 */
export type Payload = string | Uint8Array;

/** What `poll` hands a worker: one job, for one attempt, until `leaseUntil`. */
export interface Lease {
  readonly jobId: string;
  readonly token: number;
  readonly type: string;
  /** The job's payload: a string, or a Uint8Array for a job submitted with bytes (its own copy: see Payload). */
  readonly payload: Payload;
  readonly attempt: number;
  /** The attempts this job gets: its own (submit's `maxAttempts` option), else the RetryPolicy's. */
  readonly maxAttempts: number;
  readonly leaseUntil: number;
  /** The job's own lease length (submit's `timeoutMillis`), which this lease got in place of the poll's; null: the poll's. */
  readonly timeoutMillis: number | null;
  /** The job's headers (submit's `headers` option, and a traced queue's trace context); null when it has none. */
  readonly headers: Readonly<Record<string, string>> | null;
  /**
   * How long the job waited for this lease, in ms of the queue's clock: from
   * when it was due (its runAt, or when it was submitted if that is later)
   * to the lease's start (JobView's `startedAt`); 0 if the clock went back.
   */
  readonly waitMillis: number;
}

/** A snapshot of one job. */
export interface JobView {
  readonly id: string;
  readonly type: string;
  readonly priority: number;
  readonly status: JobStatus;
  readonly attempts: number;
  /** The attempts this job gets: its own (submit's `maxAttempts` option), else the RetryPolicy's. */
  readonly maxAttempts: number;
  /** The job's current runAt; poll leaves it as it is. */
  readonly nextRunAt: number;
  /** null until the first failure; retryDead keeps it. */
  readonly lastError: string | null;
  /** The job's payload: a string, or a Uint8Array for a job submitted with bytes. */
  readonly payload: Payload;
  /** The end of the current lease while RUNNING, else null. */
  readonly leaseUntil: number | null;
  /** The worker of the latest lease (the current one while RUNNING); null if never leased. */
  readonly workerId: string | null;
  /** A SUCCEEDED job's result (what its complete was given, parsed from JSON); undefined when it has none, or is not SUCCEEDED. */
  readonly result: unknown;
  /** The idempotent key it was submitted with (submit's `key`), or null. */
  readonly key: string | null;
  /** Its own lease length (submit's `timeoutMillis`), or null: each poll's leaseMillis. */
  readonly timeoutMillis: number | null;
  /** The job's headers (submit's `headers` option, and a traced queue's trace context); null when it has none. */
  readonly headers: Readonly<Record<string, string>> | null;
  /** When the job was accepted (epoch ms of the queue's clock); null only for a job a journal restored without it. */
  readonly submittedAt: number | null;
  /** When its latest lease began (the current one while RUNNING); null if never leased. release, expiry, a retry and retryDead keep it. */
  readonly startedAt: number | null;
  /** When it became SUCCEEDED, DEAD or CANCELLED; null while PENDING or RUNNING (retryDead clears it). */
  readonly finishedAt: number | null;
  /**
   * The latest progress its latest attempt reported (`progress`, a handler's
   * `ctx.progress`); undefined when that attempt reported none. A new attempt
   * starts with none; a failed or finished attempt's stays until then.
   */
  readonly progress?: number;
  /** The job's group (submit's `group`), or null. */
  readonly group: string | null;
  /** A flow's child: its parent's id. Absent for a job outside a flow, and for a flow's root. */
  readonly parentId?: string;
  /**
   * A flow's parent while PENDING: its children not yet ended (see `submitFlow`);
   * it is not leased while this is above 0. Absent for a job that has no children to wait for.
   */
  readonly waitingChildren?: number;
}

/** What a flow's parent does when a child goes DEAD or is CANCELLED: 'fail' dead-letters the parent at once; 'ignore' counts the child as ended. */
export type ChildFailurePolicy = 'fail' | 'ignore';

/** A job of a flow (`submitFlow`): its type, payload and options as `submit` takes them, and its children, each maybe a parent itself. */
export interface FlowJob {
  readonly type: string;
  readonly payload?: Payload | null;
  /** submit's options, but for `key`, `keyTtlMillis`, `debounceMillis` and `throttleMillis`. @default none */
  readonly options?: FlowJobOptions;
  /** With children: what a child DEAD or CANCELLED (or removed while PENDING) does to this job. @default 'fail' */
  readonly onChildFailure?: ChildFailurePolicy;
  /** The jobs this one waits for: it is leased only once each has ended. @default none */
  readonly children?: readonly FlowJob[];
}

/** submit's options as a flow's job takes them. */
export interface FlowJobOptions {
  readonly priority?: number;
  readonly runAt?: number;
  readonly delayMillis?: number;
  readonly maxAttempts?: number;
  readonly timeoutMillis?: number;
  readonly headers?: Record<string, string>;
  readonly group?: string;
}

/** A job's log (`logs(jobId)`): the lines kept, oldest first, and how many older ones were dropped past `maxLogLines`. */
export interface JobLogs {
  readonly lines: string[];
  readonly dropped: number;
}

export interface QueueStats {
  /** PENDING jobs, ready or delayed. */
  pending: number;
  /** PENDING jobs with runAt <= now. */
  ready: number;
  /** PENDING jobs with runAt > now, and flows' parents waiting for their children. */
  delayed: number;
  /** Flows' parents waiting for their children (counted in `delayed` too); present once the queue has had a flow. */
  waitingChildren?: number;
  running: number;
  succeeded: number;
  dead: number;
  cancelled: number;
  /** Whether the queue is paused: polls hand out nothing until `resume()`. */
  paused: boolean;
}

/**
 * A rate limit of one job type: at most `max` leases of its jobs start in
 * each window of `windowMillis`. Windows are fixed and aligned to the
 * queue's clock: the one of time `t` is [floor(t / windowMillis) *
 * windowMillis, that + windowMillis).
 */
export interface RateLimit {
  /** Leases per window, an integer from 1 to 2^31 - 1. */
  readonly max: number;
  /** The window's length in ms, an integer from 1 to 2^31 - 1. */
  readonly windowMillis: number;
}

/** A rate limit and the job type it limits, as `rateLimits()` lists them. */
export interface TypeRateLimit extends RateLimit {
  readonly type: string;
}

/** A job type's concurrency cap, as `concurrencyCaps()` lists them: at most `max` of its jobs RUNNING at once. */
export interface TypeConcurrency {
  readonly type: string;
  readonly max: number;
}

/** The concurrency caps of a queue (see `setConcurrency`): the whole queue's (null: none) and each job type's. */
export interface ConcurrencyCaps {
  readonly queue: number | null;
  readonly types: TypeConcurrency[];
}

/** A group's concurrency cap, as `groupConcurrencyCaps()` lists them (by group): at most `max` of its jobs RUNNING at once. */
export interface GroupConcurrencyCap {
  readonly group: string;
  readonly max: number;
}

/** A job type's own RetryPolicy, as `retryPolicies()` lists them. */
export interface TypeRetryPolicy {
  readonly type: string;
  readonly policy: RetryPolicy;
}

/** `rateLimits()`' and `retryPolicies()`' order on every backend: by type, as strings compare (code units), not in the order a backend happens to keep them. */
export function byType(a: { readonly type: string }, b: { readonly type: string }): number {
  return a.type < b.type ? -1 : a.type > b.type ? 1 : 0;
}

/** Orders group caps by group, as strings compare. */
export function byGroup(a: { readonly group: string }, b: { readonly group: string }): number {
  return a.group < b.group ? -1 : a.group > b.group ? 1 : 0;
}

/** What `jobs()` lists: every field may be left out. */
export interface JobQuery {
  /** Only jobs in this status. @default every status */
  status?: JobStatus;
  /** Only jobs of this type (costs more: see docs/api.md, "Listing jobs"). @default every type */
  type?: string;
  /** The most jobs on one page, 1 to 1000. @default 100 */
  limit?: number;
  /** Where to go on: the `next` of the page before. @default the first job */
  after?: string;
}

/** One page of `jobs()`: jobs in ascending submission order, and the cursor of the next page (null: this is the last). */
export interface JobPage {
  jobs: JobView[];
  next: string | null;
}
