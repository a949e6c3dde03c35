/** How long a caller waits: `finished`'s options and a timeout. */
import { InvalidArgumentError, describe } from '../errors.js';
import { readOptions } from '../options.js';

/** The options of `finished(jobId, options)`. */
export interface FinishedOptions {
  /** Reject with TimeoutError if the job has not finished after this many milliseconds. Default: wait as long as it takes. */
  timeoutMillis?: number;
  /** Reject with AbortedError once this signal aborts. */
  signal?: AbortSignal;
}

const FINISHED_OPTIONS: ReadonlySet<string> = new Set(['timeoutMillis', 'signal']);

/** `finished`'s options, checked: the timeout (Infinity when none) and the signal. */
export function checkFinishedOptions(options: unknown): { timeoutMillis: number; signal: AbortSignal | undefined } {
  if (options === undefined) return { timeoutMillis: Infinity, signal: undefined };
  const { timeoutMillis = Infinity, signal } = readOptions<FinishedOptions>('options', options, FINISHED_OPTIONS);
  checkTimeout(timeoutMillis);
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidArgumentError(`Expected \`signal\` to be an AbortSignal, got ${describe(signal)}`);
  }
  return { timeoutMillis, signal };
}

export function checkTimeout(timeoutMillis: unknown): asserts timeoutMillis is number {
  if (typeof timeoutMillis !== 'number' || !(timeoutMillis >= 0)) {
    throw new InvalidArgumentError(`Expected \`timeoutMillis\` to be a number >= 0, got ${describe(timeoutMillis)}`);
  }
}
