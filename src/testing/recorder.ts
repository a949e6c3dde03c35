/**
 * `CallRecorder`: what a thread wraps around each call it makes on a queue.
 * It takes a stamp, logs the call's arguments, makes the call, takes another
 * stamp and logs the result (or the code it threw); the log (./log.ts) turns
 * the records back into a history for the checker.
 *
 * Stamps come from ./stamps.ts.
 */
import { UnsupportedOperationError } from '../errors.js';
import type { CallArgs, LeaseResult, Result } from './history.js';
import type { StampSource } from './stamps.js';

/** Receives each record: the invocation (with the call's arguments) or the response (with its result). */
export type RecordSink = (kind: 'invoked' | 'returned', seq: number, stamp: number, body: CallArgs | Result) => void;

/** The queue methods a history holds (JobQueue's, RedisJobQueue's, or any object with the same). */
export const RECORDED_METHODS = [
  'submit', 'poll', 'complete', 'fail', 'extend', 'completeAndPoll', 'cancel', 'retryDead', 'view', 'stats',
  'release', 'remove', 'changePriority', 'changeDelay', 'promote', 'updatePayload', 'setGroupConcurrency',
] as const;
export type RecordedMethod = (typeof RECORDED_METHODS)[number];

/** What `wrap` returns: the same methods as the queue's, each recorded. */
export type RecordedQueue<Q> = Pick<Q, Extract<keyof Q, RecordedMethod>>;

export class CallRecorder {
  readonly #stamps: StampSource;
  readonly #sink: RecordSink;
  #seq = 0;

  /** Made by `HistoryLog.recorder()`. */
  constructor(
    /** The thread number its calls carry in the history. */
    readonly thread: number,
    stamps: StampSource,
    sink: RecordSink,
  ) {
    this.#stamps = stamps;
    this.#sink = sink;
  }

  /**
   * Makes the call `run` and records it as `args`, returning (or throwing)
   * what `run` does. If `run` returns a promise, the response is stamped when
   * it settles. Needs the log's own stamps (for async stamps: `callAsync`).
   */
  call<T>(args: CallArgs, run: () => T): T {
    const stamps = this.#stamps;
    if (!stamps.sync) throw new UnsupportedOperationError('This recorder takes its stamps asynchronously (redisStamps): use callAsync, or wrap the queue with an async queue');
    const seq = this.#seq++;
    // The invocation stamp: after the arguments are logged, just before the call.
    this.#sink('invoked', seq, stamps.next(), args);
    let value: T;
    try {
      value = run();
    } catch (error) {
      this.#sink('returned', seq, stamps.next(), thrown(error));
      throw error;
    }
    if (isPromise(value)) {
      return value.then(
        (settled) => {
          this.#sink('returned', seq, stamps.next(), returned(args, settled));
          return settled;
        },
        (error: unknown) => {
          this.#sink('returned', seq, stamps.next(), thrown(error));
          throw error;
        },
      ) as T;
    }
    this.#sink('returned', seq, stamps.next(), returned(args, value));
    return value;
  }

  /** `call` for any stamps: stamps, call and results are awaited in turn. */
  async callAsync<T>(args: CallArgs, run: () => T | Promise<T>): Promise<T> {
    const seq = this.#seq++;
    this.#sink('invoked', seq, await this.#stamps.next(), args);
    let value: T;
    try {
      value = await run();
    } catch (error) {
      this.#sink('returned', seq, await this.#stamps.next(), thrown(error));
      throw error;
    }
    this.#sink('returned', seq, await this.#stamps.next(), returned(args, value));
    return value;
  }

  /** Moves `clock` by `ms`, recorded: the model's clock moves with it. */
  advance(clock: { advance(ms: number): void }, ms: number): void {
    this.call({ op: 'advance', ms }, () => clock.advance(ms));
  }

  /**
   * The queue, with each of its history's methods (submit, poll, complete,
   * fail, extend, completeAndPoll, cancel, retryDead, view, stats, release,
   * remove, the four edits of a pending job, and setGroupConcurrency) recorded
   * around the real call; sync methods stay sync, async ones async (with
   * async stamps every method returns a promise).
   */
  wrap<Q extends object>(queue: Q): RecordedQueue<Q> {
    const target = queue as unknown as Record<RecordedMethod, (...args: unknown[]) => unknown>;
    const wrapped: Partial<Record<RecordedMethod, (...args: unknown[]) => unknown>> = {};
    for (const method of RECORDED_METHODS) {
      if (typeof target[method] !== 'function') continue;
      wrapped[method] = (...args: unknown[]) => {
        const described = describe(method, args);
        const run = () => target[method].apply(queue, args);
        return this.#stamps.sync ? this.call(described, run) : this.callAsync(described, run);
      };
    }
    return wrapped as RecordedQueue<Q>;
  }
}

function isPromise(value: unknown): value is Promise<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';
}

/** The call as the model reads it; a submit option the model cannot replay is refused before the call. */
function describe(method: RecordedMethod, a: unknown[]): CallArgs {
  const s = (i: number) => a[i] as string;
  const n = (i: number) => a[i] as number;
  switch (method) {
    case 'submit':
      return describeSubmit(a);
    case 'poll':
      return { op: 'poll', workerId: s(0), leaseMillis: n(1) };
    case 'complete':
      return { op: 'complete', jobId: s(0), token: n(1) };
    case 'fail':
      return a[2] === undefined || a[2] === null ? { op: 'fail', jobId: s(0), token: n(1) } : { op: 'fail', jobId: s(0), token: n(1), error: s(2) };
    case 'extend':
      return { op: 'extend', jobId: s(0), token: n(1), leaseMillis: n(2) };
    case 'completeAndPoll':
      return { op: 'completeAndPoll', jobId: s(0), token: n(1), workerId: s(2), leaseMillis: n(3) };
    case 'cancel':
    case 'retryDead':
    case 'view':
    case 'remove':
    case 'promote':
      return { op: method, jobId: s(0) };
    case 'stats':
      return { op: 'stats' };
    case 'release':
      return describeRelease(a);
    case 'changePriority':
      return { op: 'changePriority', jobId: s(0), priority: n(1) };
    case 'changeDelay':
      return { op: 'changeDelay', jobId: s(0), delayMillis: n(1) };
    case 'updatePayload':
      return { op: 'updatePayload', jobId: s(0), payload: (a[1] ?? '') as string };
    case 'setGroupConcurrency':
      return { op: 'setGroupConcurrency', group: s(0), max: a[1] as number | null };
  }
}

function describeRelease([jobId, token, options]: unknown[]): CallArgs {
  const call: CallArgs & { op: 'release' } = { op: 'release', jobId: jobId as string, token: token as number };
  if (options === undefined) return call;
  const extra = options !== null && typeof options === 'object' ? Object.keys(options).filter((key) => key !== 'delayMillis') : ['(not an object)'];
  if (extra.length > 0) throw new UnsupportedOperationError(`A recorded release takes only the option the checker's model knows (delayMillis), got ${extra.join(', ')}`);
  const { delayMillis } = options as { delayMillis?: number };
  if (delayMillis !== undefined) call.delayMillis = delayMillis;
  return call;
}

function describeSubmit([type, payload, priorityOrOptions, runAt]: unknown[]): CallArgs {
  const call: CallArgs & { op: 'submit' } = { op: 'submit', type: type as string, payload: (payload ?? '') as string };
  let priority = priorityOrOptions;
  let group: unknown;
  if (priorityOrOptions !== null && typeof priorityOrOptions === 'object') {
    const extra = Object.keys(priorityOrOptions).filter((key) => key !== 'priority' && key !== 'runAt' && key !== 'group');
    if (extra.length > 0) {
      throw new UnsupportedOperationError(`A recorded submit takes only the options the checker's model knows (priority, runAt, group), got ${extra.join(', ')}`);
    }
    ({ priority, runAt, group } = priorityOrOptions as { priority?: number; runAt?: number; group?: string });
  }
  if (priority !== undefined) call.priority = priority as number;
  if (runAt !== undefined) call.runAt = runAt as number;
  if (group !== undefined) call.group = group as string;
  return call;
}

/** The result as the model can speak for it: a lease's six fields, a view's fields, the rest as is. */
function returned(args: CallArgs, value: unknown): Result {
  if ((args.op === 'poll' || args.op === 'completeAndPoll') && value !== undefined && value !== null) {
    const { jobId, token, type, payload, attempt, leaseUntil } = value as LeaseResult;
    return { ok: true, value: { jobId, token, type, payload, attempt, leaseUntil } };
  }
  if (args.op === 'view' && value !== null && typeof value === 'object') {
    const { id, type, priority, status, attempts, nextRunAt, lastError, payload, leaseUntil } = value as Record<string, unknown>;
    return { ok: true, value: { id, type, priority, status, attempts, nextRunAt, lastError, payload, leaseUntil: leaseUntil ?? null } };
  }
  if (args.op === 'stats' && value !== null && typeof value === 'object') {
    const { pending, ready, delayed, running, succeeded, dead, cancelled, paused } = value as Record<string, unknown>;
    return { ok: true, value: { pending, ready, delayed, running, succeeded, dead, cancelled, paused } };
  }
  return { ok: true, value };
}

/** A JobQueueError's code (compared by code: errors from another thread lose their class), else UNEXPECTED with the message. */
function thrown(error: unknown): Result {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('ERR_')) return { ok: false, code };
  return { ok: false, code: 'UNEXPECTED', message: String((error as Error | null)?.stack ?? error) };
}
