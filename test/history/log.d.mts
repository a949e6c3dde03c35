// Types of ./log.mjs, the call log shared by the recording threads and the test.
import type { Call } from './history.js';

export declare const OPS: readonly string[];
export declare const CODES: readonly string[];
export declare const TYPES: readonly string[];
export declare const FAIL_ERRORS: readonly string[];
export declare const UNRECOGNISED: string;
/** Where a row keeps the call's op and its invocation and response stamps (NaN until written). */
export declare const F_OP: number;
export declare const F_INV: number;
export declare const F_RESP: number;
/** float64s per logged call. */
export declare const ROW: number;
export declare function jobNumber(id: string): number;

export interface UnexpectedThrow {
  row: number;
  message: string;
}

/** A queue as the recorder calls it: the JobQueue methods a history uses. */
export interface RecordedQueue {
  submit(type: string, payload?: string | null, priority?: number, runAtMillis?: number): string;
  poll(workerId: string, leaseMillis: number): unknown;
  complete(jobId: string, token: number): void;
  fail(jobId: string, token: number, error?: string | null): void;
  extend(jobId: string, token: number, leaseMillis: number): number;
  completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number): unknown;
  cancel(jobId: string): void;
  retryDead(jobId: string): void;
  view(jobId: string): unknown;
  stats(): unknown;
}

export declare function record(
  log: Float64Array,
  row: number,
  stamps: Int32Array,
  thread: number,
  queue: RecordedQueue,
  clock: { advance(ms: number): void },
  op: number,
  args: readonly number[],
  unexpected: UnexpectedThrow[],
): unknown;

export declare function decode(log: Float64Array, count: number, unexpected?: readonly UnexpectedThrow[]): Call[];
