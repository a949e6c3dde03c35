/**
 * A concurrent history: every call a thread made, with its arguments, what it
 * returned (or the code it threw), and two stamps of one shared counter
 * taken just before the call and just after it returned. Call A happened
 * before call B in real time iff A's response stamp is below B's invocation
 * stamp; calls whose intervals overlap ran (possibly) at once.
 *
 * The log (./log.ts) decodes what threads recorded into this form; a test may
 * also write histories by hand in it.
 */
import { inspect } from 'node:util';

export interface LeaseResult {
  jobId: string;
  token: number;
  type: string;
  payload: string;
  attempt: number;
  leaseUntil: number;
}

export type CallArgs =
  /** `group` counts against its cap (`setGroupConcurrency`); the model has no turns (check such histories in `relaxed-order`). */
  | { op: 'submit'; type: string; payload: string; priority?: number; runAt?: number; group?: string }
  | { op: 'poll'; workerId: string; leaseMillis: number }
  | { op: 'complete'; jobId: string; token: number }
  | { op: 'fail'; jobId: string; token: number; error?: string }
  | { op: 'extend'; jobId: string; token: number; leaseMillis: number }
  | { op: 'completeAndPoll'; jobId: string; token: number; workerId: string; leaseMillis: number }
  | { op: 'cancel'; jobId: string }
  | { op: 'retryDead'; jobId: string }
  | { op: 'release'; jobId: string; token: number; delayMillis?: number }
  | { op: 'remove'; jobId: string }
  | { op: 'changePriority'; jobId: string; priority: number }
  | { op: 'changeDelay'; jobId: string; delayMillis: number }
  | { op: 'promote'; jobId: string }
  | { op: 'updatePayload'; jobId: string; payload: string }
  | { op: 'view'; jobId: string }
  | { op: 'stats' }
  /** `max` null: the group's cap removed. */
  | { op: 'setGroupConcurrency'; group: string; max: number | null }
  | { op: 'advance'; ms: number }
  /**
   * A payload reserved to be written in place, and one given back (./in-place.ts): they change no job, and the
   * model steps over them; `name` is the payload a submit of the reservation records.
   */
  | { op: 'reserveBytes'; name: string; bytes: number }
  | { op: 'releaseBytes'; name: string };

export type Op = CallArgs['op'];

/**
 * What a call returned (`value`: the id, lease, view, stats or new leaseUntil),
 * or the code it threw: a JobQueueError's `code`, 'UNEXPECTED' for any other
 * throw, or NO_RESPONSE for a pending call.
 */
export type Result = { ok: true; value: unknown } | { ok: false; code: string; message?: string };

/** The code of a pending call's result: it never returned. */
export const NO_RESPONSE = 'NO_RESPONSE';

export interface Call {
  /** Who made the call: a thread's (or a process's) number; calls of one thread may overlap too (async calls). */
  thread: number;
  call: CallArgs;
  /** Shared-counter stamp taken immediately before the call. */
  inv: number;
  /** Shared-counter stamp taken immediately after it returned or threw (Infinity for a pending call). */
  resp: number;
  result: Result;
  /**
   * The call never returned: its thread was killed inside it (or its reply
   * was lost). It may have taken effect at any instant after `inv`, or never,
   * and its result is unknown; the checker tries both.
   */
  pending?: boolean;
  /**
   * The call's thread was stalled inside it past the queue's patience, taken
   * for dead, and went on (docs/concurrency.md, Threads that die): a submit
   * may then have taken a job number that no job gets before its own.
   */
  presumedDead?: boolean;
}

/** How the queue of a history was made: the model starts from the same. */
export interface HistorySetup {
  start: number;
  policy: { maxAttempts: number; base: number; max: number };
  capacity: number;
}

/** The lease a call made — a poll's or completeAndPoll's, or an extend's new end — as its job and leaseUntil; undefined if it made none. */
export function leaseMade(c: Call): { jobId: string; leaseUntil: number } | undefined {
  if (!c.result.ok || c.pending === true) return undefined;
  const { call } = c;
  if (call.op === 'extend') return { jobId: call.jobId, leaseUntil: c.result.value as number };
  if (call.op !== 'poll' && call.op !== 'completeAndPoll') return undefined;
  const lease = c.result.value as LeaseResult | undefined;
  return lease === undefined ? undefined : { jobId: lease.jobId, leaseUntil: lease.leaseUntil };
}

/** One call as a line: `[t1 12..15] poll(w1, 30) -> J2 #7 attempt 1 until 1030`. */
export function formatCall(c: Call): string {
  const { op, ...args } = c.call;
  const shown = Object.values(args).map((v) => inspect(v)).join(', ');
  if (c.pending === true) return `[t${c.thread} ${c.inv}..] ${op}(${shown}) -> no response (pending)`;
  return `[t${c.thread} ${c.inv}..${c.resp}] ${op}(${shown}) -> ${formatResult(c.result)}`;
}

function formatResult(r: Result): string {
  if (!r.ok) return `throws ${r.code}${r.message === undefined ? '' : ` (${r.message})`}`;
  const v = r.value as Partial<LeaseResult> | undefined;
  if (v !== null && typeof v === 'object' && 'token' in v) return `${v.jobId} #${v.token} attempt ${v.attempt} until ${v.leaseUntil}`;
  return inspect(r.value, { breakLength: Infinity });
}

/** The calls in invocation order, one a line. */
export function formatHistory(calls: readonly Call[]): string {
  return [...calls].sort((a, b) => a.inv - b.inv).map(formatCall).join('\n');
}
