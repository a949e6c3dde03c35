import { InvalidArgumentError, UnsupportedOperationError, describe } from '../errors.js';
import type { WorkerQueue } from './backend.js';
import type { HandlerContext } from './handlers.js';
import { checkLogLine } from '../validate/logs.js';
import { PROGRESS_BASE, PROGRESS_LEASE, PROGRESS_REPORTS, PROGRESS_VALUE, leaseWordOf } from './layout.js';

/** Turns a number into the bits of its float32, for an Int32 word (one buffer per thread, reused). */
const float32 = new Float32Array(1);
const float32Bits = new Int32Array(float32.buffer);

/**
 * One inflight place's progress words (see layout.ts: REPORTS, VALUE), as its
 * pool thread writes them: one job at a time runs in a place, so one writer.
 */
export class ProgressPlace {
  readonly #words: Int32Array;
  readonly #at: number;
  /** REPORTS as last stored: only this thread stores it, so no load is needed. */
  #reports: number;

  constructor(words: Int32Array, at: number) {
    this.#words = words;
    this.#at = at;
    this.#reports = Atomics.load(words, at + PROGRESS_REPORTS);
  }

  /**
   * A job of lease `token` begins in the place: before its inflight words are written, so that the main thread
   * that finds them counts the reports made from here on as this job's (see layout.ts: BASE, LEASE).
   */
  begin(token: number): void {
    Atomics.store(this.#words, this.#at + PROGRESS_BASE, this.#reports);
    // After BASE: pairs with ProgressWatch#sample's load of LEASE, then BASE.
    Atomics.store(this.#words, this.#at + PROGRESS_LEASE, leaseWordOf(token));
  }

  /** Publishes `value` (a finite number, checked by the caller). */
  report(value: number): void {
    float32[0] = value;
    // The value first, then the count that tells the main thread a report came. Pairs with ProgressWatch#sample.
    Atomics.store(this.#words, this.#at + PROGRESS_VALUE, float32Bits[0]!);
    this.#reports = (this.#reports + 1) | 0;
    Atomics.store(this.#words, this.#at + PROGRESS_REPORTS, this.#reports);
  }
}

/**
 * Reads back a VALUE word: an integer as the float32 holds it (exact up to 2^24), a fraction to 7 significant
 * digits, so 33.33 reads 33.33 rather than the float32's 33.33000183105469.
 */
export function progressValueOf(bits: number): number {
  float32Bits[0] = bits;
  const value = float32[0]!;
  return Number.isInteger(value) ? value : Number(value.toPrecision(7));
}

/** Checks a handler's `ctx.progress(value)` argument. */
export function checkProgress(value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(`Expected \`value\` to be a finite number, got ${describe(value)}`);
  }
}

/**
 * A job's abort signal, made only when its handler reads it: Node 20 makes an
 * AbortController in about 2 µs here, as long as the rest of a no-op job's
 * run through a pool thread, and most handlers never read their signal. An
 * abort before the first read is kept and applied as the signal is made, so
 * a handler that reads it late finds it aborted, with the same reason.
 */
export class LazyAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts with `reason` (given: the pool always says why); the first abort's reason stands, as with AbortController. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  /** Why it was aborted; undefined while it is not. */
  get reason(): unknown {
    return this.#reason;
  }
}

/**
 * What a handler gets besides its payload. A class, not an object literal: a
 * literal with a getter is made on V8's slow path (about 350 ns here, per job).
 * `signal` is a getter of the prototype, so a spread copy of the context
 * (`{ ...ctx }`) has no signal: pass `ctx` itself, or `ctx.signal`.
 */
export class JobContext implements HandlerContext {
  readonly jobId: string;
  readonly type: string;
  readonly attempt: number;
  readonly heartbeat: () => void;
  readonly #aborter: LazyAbort;
  readonly #progress: ProgressPlace | undefined;
  readonly #log: ((line: string) => void) | undefined;
  readonly #flows: Pick<WorkerQueue, 'childResults'> | undefined;

  /**
   * `progress`: the place's words; `log`: where the thread sends log lines. Neither outside a pool thread
   * (a test's context), where progress and lines are only checked. `flows`: the thread's queue, which reads
   * a parent's children's results (no closure per job).
   */
  constructor(
    jobId: string, type: string, attempt: number, heartbeat: () => void, aborter: LazyAbort, progress?: ProgressPlace, log?: (line: string) => void,
    flows?: Pick<WorkerQueue, 'childResults'>,
  ) {
    this.jobId = jobId;
    this.type = type;
    this.attempt = attempt;
    this.heartbeat = heartbeat;
    this.#aborter = aborter;
    this.#progress = progress;
    this.#log = log;
    this.#flows = flows;
  }

  /** The results of this job's children in a flow (see HandlerContext#childResults). */
  async childResults(): Promise<Record<string, unknown>> {
    if (this.#flows === undefined) throw new UnsupportedOperationError('This context was made outside a pool thread: it has no queue to read children\'s results from');
    return this.#flows.childResults(this.jobId);
  }

  /**
   * Reports how far the job got (a finite number: a percent, items done...;
   * kept as a float32: integers exact up to 2^24, fractions to 7 significant digits). Two Atomics stores, no
   * message: cheap in a tight loop. While reports keep coming, the pool's
   * main thread extends the lease, so a synchronous stretch that reports is
   * not taken for hung.
   */
  progress(value: number): void {
    checkProgress(value);
    this.#progress?.report(value);
  }

  /** Appends a line to the job's log (see HandlerContext#log). */
  log(line: string): void {
    checkLogLine(line);
    this.#log?.(line);
  }

  get signal(): AbortSignal {
    return this.#aborter.signal;
  }
}
