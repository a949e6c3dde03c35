import { InvalidArgumentError, JobQueueError, describe } from './errors.js';
import { CHUNK_BYTES } from './shm/memory/layout.js';

export interface JobQueueOptions {
  /**
   * Most jobs held at once: pending, running and dead jobs, plus finished
   * (succeeded, cancelled) jobs retained until their room is needed.
   * @default 65536
   */
  capacity?: number;
  /**
   * Largest payload, in UTF-8 bytes; a larger one is refused with InvalidArgumentError.
   * @default 1048576 (1 MiB)
   */
  maxPayloadBytes?: number;
  /**
   * Shared bytes for every job's payload and lastError, in 68-byte chunks (a
   * payload of up to 64 bytes takes one; types are stored once each, apart).
   * Untouched pages cost no memory.
   * @default 64 MiB, or more: at least 136 bytes per job of `capacity` and 4 × maxPayloadBytes (at most 2 GiB)
   */
  arenaBytes?: number;
  /**
   * Longest lastError kept, in UTF-8 bytes; a longer message is cut to fit.
   * @default 8192
   */
  maxErrorBytes?: number;
  /**
   * How long a thread may hold the queue's internal lock before the others
   * presume it killed and repair the queue from the slot words. Critical
   * sections take microseconds; this only bounds the stall a killed thread causes.
   * Each time a live thread is found to have been presumed killed (it was only
   * waiting for a core), the wait doubles for the queue's life, up to 64× or
   * 4 s, whichever is less.
   * @default 500
   */
  lockTimeoutMillis?: number;
  /**
   * Largest result a complete may store (the JSON text of the value, in UTF-8
   * bytes); a larger one is refused with InvalidArgumentError.
   * @default 65536
   */
  maxResultBytes?: number;
  /**
   * Lines of a job's log (`log`, a handler's `ctx.log`) kept: past it the
   * oldest lines are dropped, and counted (`logs(jobId).dropped`).
   * @default 100
   */
  maxLogLines?: number;
  /**
   * UTF-8 bytes of one log line kept: a longer line is cut to it (at a
   * character's boundary).
   * @default 1024
   */
  maxLogLineBytes?: number;
  /**
   * Finished jobs (SUCCEEDED, CANCELLED) to evict without waiting for their
   * room to be needed: beyond `maxFinished` of them, oldest finished first, and
   * those finished `maxAgeMillis` ago or longer. DEAD jobs are kept for a
   * person, unless `maxDead` or `maxDeadAgeMillis` is given: then DEAD jobs
   * beyond `maxDead`, oldest dead first, and those dead `maxDeadAgeMillis` ago
   * or longer are evicted too (never for room).
   * @default {} (finished jobs kept until their room is needed, DEAD jobs until retried or removed)
   */
  retain?: RetainOptions;
  /**
   * Trace this queue's jobs with OpenTelemetry (through `@opentelemetry/api`,
   * an optional peer dependency, and the tracer provider and propagator your
   * SDK registers): a PRODUCER span `create {name}` per submitted job, whose
   * context travels in the job's headers, and a CONSUMER span `process {name}`
   * per attempt a WorkerPool runs (see docs/tracing.md). `true` names the
   * queue "default" in its spans. Threads that attach the queue trace it too.
   * @default false
   */
  tracing?: boolean | TracingOptions;
}

export interface TracingOptions {
  /**
   * The queue's name in its spans (`messaging.destination.name`, and the span names).
   * @default "default"
   */
  name?: string;
}

/** See JobQueueOptions#retain; each left out is no limit. */
export interface RetainOptions {
  maxFinished?: number;
  maxAgeMillis?: number;
  /** DEAD jobs kept at most; beyond it the oldest dead are evicted. */
  maxDead?: number;
  /** DEAD jobs are evicted once dead this long. */
  maxDeadAgeMillis?: number;
}

/** The options with every default filled in; `tracing` false, or the queue's name in its spans. */
export type FilledOptions = Required<Omit<JobQueueOptions, 'tracing'>> & { tracing: false | Required<TracingOptions> };

/** A traced queue's name in its spans when its options give none. */
export const DEFAULT_TRACING_NAME = 'default';

/**
 * The longest span of time an argument may give (a delay, a lease, a TTL, a
 * backoff): 2^53 - 1 ms, about 285,000 years. Any finite time plus it stays
 * finite, so no runAt, leaseUntil or key expiry computed from it overflows
 * to Infinity (which the journal would then refuse to open, and Redis store as NaN).
 */
export const MAX_SPAN_MILLIS = Number.MAX_SAFE_INTEGER;

/** Longest job type, in UTF-8 bytes. */
export const MAX_TYPE_BYTES = 1024;

export const kDefaultOptions: Readonly<Omit<FilledOptions, 'arenaBytes' | 'retain'>> = Object.freeze({
  capacity: 65_536,
  maxPayloadBytes: 1_048_576,
  maxErrorBytes: 8192,
  lockTimeoutMillis: 500,
  maxResultBytes: 65_536,
  maxLogLines: 100,
  maxLogLineBytes: 1024,
  tracing: false,
});
const DEFAULT_ARENA_BYTES = 64 * 1024 * 1024;
const MAX_CAPACITY = 1 << 24;
const MAX_ARENA_BYTES = 2 ** 31 - 8;

/** The keys of JobQueueOptions: `new JobQueue` refuses any other. */
export const JOB_QUEUE_OPTIONS: ReadonlySet<string> = new Set([
  'capacity', 'maxPayloadBytes', 'arenaBytes', 'maxErrorBytes', 'lockTimeoutMillis', 'maxResultBytes', 'maxLogLines', 'maxLogLineBytes', 'retain', 'tracing',
]);

/**
 * Refuses `options` (named `name` in the message) unless it is an object, not
 * an array, with no keys but `allowed`: a misspelt option must not be
 * silently ignored. Returns a plain copy of its own enumerable properties,
 * read once (as `{ ...options }` reads them), for the caller to check and
 * use: an object whose properties cannot be read (a getter or a proxy that
 * throws) is refused here rather than letting the user's error out of the
 * call, and a getter cannot give the check one value and the call another.
 * The one check of every options object's shape.
 */
export function readOptions<T extends object>(name: string, options: unknown, allowed: ReadonlySet<string>): Partial<T> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an object, got ${describe(options)}`);
  }
  const copy = readCallers(name, () => ({ ...options }) as Partial<T>);
  const unknown = Object.keys(copy).find((key) => !allowed.has(key));
  if (unknown !== undefined) {
    throw new InvalidArgumentError(`Expected \`${name}\` to have no keys but ${[...allowed].join(', ')}, got \`${unknown}\``);
  }
  return copy;
}

/**
 * `read()`, which reads an object the caller gave (its properties, its
 * elements): one that throws as it is read (a getter, a proxy) is refused
 * with InvalidArgumentError naming `name`, rather than letting the caller's
 * own error out of the call. An error of ours that `read` throws goes out as it is.
 */
export function readCallers<T>(name: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof JobQueueError) throw error;
    throw new InvalidArgumentError(`Expected \`${name}\` to be an object whose properties can be read, got one that threw when read`);
  }
}

/** An option's value, or `fallback` when it is left out (undefined): null is a value, refused by the option's own check. */
export function given<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

/**
 * Fills in defaults and checks every option; throws InvalidArgumentError naming the first bad one.
 * `allowed`: the keys the caller takes (JobQueue.open adds its own).
 */
export function fillOptions(options: JobQueueOptions | undefined, allowed: ReadonlySet<string> = JOB_QUEUE_OPTIONS): FilledOptions {
  options = readOptions<JobQueueOptions>('options', given(options, {}), allowed);
  const capacity = integerOption('capacity', given(options.capacity, kDefaultOptions.capacity), 1, MAX_CAPACITY);
  const maxPayloadBytes = integerOption('maxPayloadBytes', given(options.maxPayloadBytes, kDefaultOptions.maxPayloadBytes), 1, 2 ** 28);
  const maxErrorBytes = integerOption('maxErrorBytes', given(options.maxErrorBytes, kDefaultOptions.maxErrorBytes), 16, 2 ** 24);
  const lockTimeoutMillis = integerOption('lockTimeoutMillis', given(options.lockTimeoutMillis, kDefaultOptions.lockTimeoutMillis), 1, 3_600_000);
  const maxResultBytes = integerOption('maxResultBytes', given(options.maxResultBytes, kDefaultOptions.maxResultBytes), 1, 2 ** 24);
  const maxLogLines = integerOption('maxLogLines', given(options.maxLogLines, kDefaultOptions.maxLogLines), 1, 1_000_000);
  const maxLogLineBytes = integerOption('maxLogLineBytes', given(options.maxLogLineBytes, kDefaultOptions.maxLogLineBytes), 1, 2 ** 20);
  // Room for at least one job of the largest size, in its power-of-two block.
  const smallestArena = 2 * (maxPayloadBytes + MAX_TYPE_BYTES + 16);
  const arenaBytes = integerOption(
    'arenaBytes',
    given(options.arenaBytes, Math.min(MAX_ARENA_BYTES, Math.max(DEFAULT_ARENA_BYTES, 2 * CHUNK_BYTES * capacity, 4 * maxPayloadBytes))),
    smallestArena,
    MAX_ARENA_BYTES,
  );
  return {
    capacity, maxPayloadBytes, arenaBytes, maxErrorBytes, lockTimeoutMillis, maxResultBytes, maxLogLines, maxLogLineBytes, retain: checkRetain(options.retain), tracing: filledTracing(options.tracing),
  };
}

const TRACING_FIELDS: ReadonlySet<string> = new Set(['name']);

/** The `tracing` option filled in: false (absent), or the queue's name in its spans (`true`, or no name: `defaultName`). */
export function filledTracing(tracing: unknown, defaultName = DEFAULT_TRACING_NAME): false | Required<TracingOptions> {
  if (tracing === undefined || tracing === false) return false;
  if (tracing === true) return { name: defaultName };
  const name = tracing !== null && typeof tracing === 'object' ? (readOptions<TracingOptions>('tracing', tracing, TRACING_FIELDS).name ?? defaultName) : undefined;
  if (typeof name !== 'string' || name.trim() === '') {
    throw new InvalidArgumentError(`Expected \`tracing\` to be a boolean or { name?: a non-blank string }, got ${describe(tracing)}`);
  }
  return { name };
}

const RETAIN_FIELDS: ReadonlySet<string> = new Set(['maxFinished', 'maxAgeMillis', 'maxDead', 'maxDeadAgeMillis']);

/** The `retain` option, checked; a limit left out stays out. */
export function checkRetain(retain: unknown): RetainOptions {
  if (retain === undefined) return {};
  const { maxFinished, maxAgeMillis, maxDead, maxDeadAgeMillis } = readOptions<RetainOptions>('retain', retain, RETAIN_FIELDS);
  const checked: RetainOptions = {};
  if (maxFinished !== undefined) checked.maxFinished = integerOption('retain.maxFinished', maxFinished, 0, MAX_CAPACITY);
  if (maxAgeMillis !== undefined) checked.maxAgeMillis = ageOption('retain.maxAgeMillis', maxAgeMillis);
  if (maxDead !== undefined) checked.maxDead = integerOption('retain.maxDead', maxDead, 0, MAX_CAPACITY);
  if (maxDeadAgeMillis !== undefined) checked.maxDeadAgeMillis = ageOption('retain.maxDeadAgeMillis', maxDeadAgeMillis);
  return checked;
}

function ageOption(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be a finite number >= 0, got ${describe(value)}`);
  }
  return value;
}

function integerOption(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || !(value >= min && value <= max)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}
