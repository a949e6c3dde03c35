/**
 * WorkerPool's options: one interface with a default per field, one defaults
 * object, one filled type, and the checks that turn bad input into
 * InvalidArgumentError before anything starts.
 */
import { availableParallelism } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ResourceLimits } from 'node:worker_threads';
import { InvalidArgumentError, describe } from '../errors.js';
import { given, readCallers, readOptions } from '../options.js';
import { checkLeaseMillis } from '../validate/lease.js';
import type { PoolLogger } from './events.js';

/** What a pool does with a job whose type its handler module does not export. */
export type UnknownTypePolicy = 'dead-letter' | 'retry';

export interface WorkerPoolOptions {
  /** The handler module: a path or URL whose exports map job type → handler (named exports, or a default export object). */
  handlers: string | URL;
  /**
   * Pool threads, 1 to MAX_POOL_THREADS (1024): a fixed count, the same as `minThreads` and
   * `maxThreads` both set to it. Not with either of them.
   * @default os.availableParallelism()
   */
  threads?: number;
  /**
   * The threads kept however idle the pool is, 1 to `maxThreads`.
   * @default maxThreads (a fixed count)
   */
  minThreads?: number;
  /**
   * The most threads: while every thread is busy (each holds `concurrency` jobs) and a job is
   * ready, the pool starts another, up to this many. 1 to MAX_POOL_THREADS (1024).
   * @default os.availableParallelism()
   */
  maxThreads?: number;
  /**
   * A thread beyond `minThreads` that has started no job for this long (wall clock) leaves the pool.
   * @default 30000
   */
  idleTimeoutMillis?: number;
  /**
   * Lease per poll, in the queue clock's milliseconds. Heartbeats extend it every third of it
   * while the thread is healthy; a thread silent for this long (wall clock) is presumed hung.
   * `close()` also waits this long (at least a second) for running jobs before handing them back.
   * @default 30000
   */
  leaseMillis?: number;
  /**
   * Jobs at once per thread, for async handlers, 1 to MAX_CONCURRENCY (4096).
   * @default 1
   */
  concurrency?: number;
  /**
   * Prefix of the worker ids shown in job views; thread i polls as `${workerId}-${i}`.
   * @default 'pool'
   */
  workerId?: string;
  /**
   * Longest run of one attempt, in wall-clock milliseconds: then its `ctx.signal` aborts, and an
   * attempt that has not ended `timeoutGraceMillis` later fails with "timed out after N ms"
   * (a thread that never yields is terminated and replaced). A number for every type, or a
   * number per type with `default` for the others; undefined: no timeout.
   * @default undefined
   */
  timeoutMillis?: number | TimeoutsByType;
  /**
   * How long an attempt past its timeout may take to stop after its signal aborted.
   * @default 1000
   */
  timeoutGraceMillis?: number;
  /**
   * Heap limits of each pool thread (worker_threads' `resourceLimits`, e.g.
   * `{ maxOldGenerationSizeMb: 256 }`). A thread that exceeds them dies at once, its job fails
   * with a lastError that says the thread ran out of memory, and the thread is replaced.
   * @default undefined (Node's own limits)
   */
  resourceLimits?: ResourceLimits;
  /**
   * A job whose type the handler module does not export: 'dead-letter' fails it at once, for
   * good; 'retry' fails it as an ordinary attempt, retried after its backoff (a rolling deploy,
   * where a newer pool may know the type).
   * @default 'dead-letter'
   */
  unknownTypes?: UnknownTypePolicy;
  /**
   * Process signals on which the pool closes itself (`close()`), e.g. `['SIGTERM', 'SIGINT']`.
   * Once closed it stops listening; the process then exits as soon as nothing else keeps it alive.
   * @default []
   */
  shutdownOn?: readonly NodeJS.Signals[];
  /**
   * Recycle a thread after it has run this many jobs: it leases no more, lets its jobs finish, and
   * exits; a fresh thread (a new heap) takes its place. Its jobs are never lost or retried for it.
   * For handlers that leak (tinypool's `isolateWorkers` is 1).
   * @default Infinity (never)
   */
  maxJobsPerThread?: number;
  /**
   * Recycle a thread, as `maxJobsPerThread` does, once its heap in use (V8's `used_heap_size`)
   * is past this many bytes after a job (tinypool's `maxMemoryLimitBeforeRecycle`).
   * @default Infinity (never)
   */
  maxHeapBytes?: number;
  /** A logger with pino's method shape: failures and stalls are logged as warnings, dead letters and pool errors as errors, thread restarts as warnings. */
  logger?: PoolLogger;
}

/** Timeouts by job type; `default` applies to the types not named. */
export type TimeoutsByType = Readonly<Record<string, number>> & { readonly default?: number };

export interface FilledPoolOptions {
  handlers: string;
  /** The most threads (maxThreads): the control block has a place for each. */
  threads: number;
  minThreads: number;
  idleTimeoutMillis: number;
  leaseMillis: number;
  concurrency: number;
  workerId: string;
  timeouts: { default: number; byType: Record<string, number> };
  timeoutGraceMillis: number;
  resourceLimits: ResourceLimits | undefined;
  unknownTypes: UnknownTypePolicy;
  shutdownOn: readonly NodeJS.Signals[];
  logger: PoolLogger | undefined;
  maxJobsPerThread: number;
  maxHeapBytes: number;
}

/** The most threads a pool takes (each a thread of its own, with its own heap): past the cores of any machine. */
export const MAX_POOL_THREADS = 1024;
/** The most jobs at once per thread: each costs a slot of the pool's shared in-flight table, allocated up front. */
export const MAX_CONCURRENCY = 4096;

const kDefaults = {
  leaseMillis: 30_000, concurrency: 1, workerId: 'pool', idleTimeoutMillis: 30_000, timeoutGraceMillis: 1_000, unknownTypes: 'dead-letter', shutdownOn: [],
} as const;

/** A timeout of 0 in the filled options: none. */
export const NO_TIMEOUT = 0;

/** The keys of WorkerPoolOptions: a pool refuses any other. */
const POOL_OPTIONS: ReadonlySet<string> = new Set([
  'handlers', 'threads', 'minThreads', 'maxThreads', 'idleTimeoutMillis', 'leaseMillis', 'concurrency', 'workerId', 'timeoutMillis', 'timeoutGraceMillis',
  'resourceLimits', 'maxJobsPerThread', 'maxHeapBytes', 'unknownTypes', 'shutdownOn', 'logger',
]);

export function fillPoolOptions(asked: WorkerPoolOptions): FilledPoolOptions {
  const options = readOptions<WorkerPoolOptions>('options', asked, POOL_OPTIONS);
  // The queue's own check: a pool must not take a lease length that every one of its polls would refuse.
  const leaseMillis = given(options.leaseMillis, kDefaults.leaseMillis);
  checkLeaseMillis(leaseMillis);
  const workerId = given(options.workerId, kDefaults.workerId);
  if (typeof workerId !== 'string' || workerId.trim() === '') {
    throw new InvalidArgumentError(`Expected \`workerId\` to be a non-blank string, got ${describe(workerId)}`);
  }
  const unknownTypes = given(options.unknownTypes, kDefaults.unknownTypes);
  if (unknownTypes !== 'dead-letter' && unknownTypes !== 'retry') {
    throw new InvalidArgumentError(`Expected \`unknownTypes\` to be 'dead-letter' or 'retry', got ${describe(unknownTypes)}`);
  }
  const { minThreads, maxThreads } = threadCounts(options);
  return {
    handlers: moduleUrl(options.handlers),
    threads: maxThreads,
    minThreads,
    idleTimeoutMillis: positiveMillis('idleTimeoutMillis', given(options.idleTimeoutMillis, kDefaults.idleTimeoutMillis)),
    leaseMillis,
    concurrency: boundedInteger('concurrency', given(options.concurrency, kDefaults.concurrency), MAX_CONCURRENCY),
    workerId,
    timeouts: timeouts(options.timeoutMillis),
    timeoutGraceMillis: positiveMillis('timeoutGraceMillis', given(options.timeoutGraceMillis, kDefaults.timeoutGraceMillis)),
    resourceLimits: resourceLimits(options.resourceLimits),
    unknownTypes,
    shutdownOn: signals(given<readonly NodeJS.Signals[]>(options.shutdownOn, kDefaults.shutdownOn)),
    logger: logger(options.logger),
    maxJobsPerThread: atLeastOne('maxJobsPerThread', given(options.maxJobsPerThread, Infinity)),
    maxHeapBytes: atLeastOne('maxHeapBytes', given(options.maxHeapBytes, Infinity)),
  };
}

/** `threads`, or `minThreads` and `maxThreads` (minThreads defaulting to maxThreads: a fixed count). */
function threadCounts(options: Partial<WorkerPoolOptions>): { minThreads: number; maxThreads: number } {
  if (options.threads !== undefined) {
    if (options.minThreads !== undefined || options.maxThreads !== undefined) {
      throw new InvalidArgumentError('Expected `threads` (a fixed count) or `minThreads`/`maxThreads`, not both');
    }
    const threads = boundedInteger('threads', options.threads, MAX_POOL_THREADS);
    return { minThreads: threads, maxThreads: threads };
  }
  const maxThreads = boundedInteger('maxThreads', given(options.maxThreads, Math.min(availableParallelism(), MAX_POOL_THREADS)), MAX_POOL_THREADS);
  const minThreads = boundedInteger('minThreads', given(options.minThreads, maxThreads), MAX_POOL_THREADS);
  if (minThreads > maxThreads) {
    throw new InvalidArgumentError(`Expected \`minThreads\` to be at most \`maxThreads\` (${maxThreads}), got ${describe(minThreads)}`);
  }
  return { minThreads, maxThreads };
}

/** An integer ≥ 1, or Infinity (never). */
function atLeastOne(name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value === Infinity || (Number.isInteger(value) && value >= 1))) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an integer ≥ 1 or Infinity, got ${describe(value)}`);
  }
  return value;
}

function timeouts(value: unknown): FilledPoolOptions['timeouts'] {
  if (value === undefined) return { default: NO_TIMEOUT, byType: {} };
  if (typeof value === 'number') return { default: positiveMillis('timeoutMillis', value), byType: {} };
  if (value === null || typeof value !== 'object') {
    throw new InvalidArgumentError(`Expected \`timeoutMillis\` to be a number of milliseconds or an object of them by job type, got ${describe(value)}`);
  }
  const byType: Record<string, number> = {};
  const asked = readCallers('timeoutMillis', () => ({ ...value }) as TimeoutsByType);
  for (const [type, millis] of Object.entries(asked)) {
    if (type !== 'default') byType[type] = positiveMillis(`timeoutMillis.${type}`, millis);
  }
  const fallback = asked.default;
  return { default: fallback === undefined ? NO_TIMEOUT : positiveMillis('timeoutMillis.default', fallback), byType };
}

function resourceLimits(value: unknown): ResourceLimits | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object') {
    throw new InvalidArgumentError(`Expected \`resourceLimits\` to be worker_threads resource limits, got ${describe(value)}`);
  }
  const limits = readCallers('resourceLimits', () => ({ ...value }) as ResourceLimits);
  for (const [name, limit] of Object.entries(limits)) positiveMillis(`resourceLimits.${name}`, limit);
  return limits;
}

function signals(value: unknown): readonly NodeJS.Signals[] {
  const names = readCallers('shutdownOn', () => (Array.isArray(value) ? [...(value as unknown[])] : undefined));
  if (names === undefined || !names.every((signal) => typeof signal === 'string' && /^SIG[A-Z0-9]+$/.test(signal))) {
    throw new InvalidArgumentError(`Expected \`shutdownOn\` to be an array of signal names such as 'SIGTERM', got ${describe(value)}`);
  }
  return [...new Set(names as NodeJS.Signals[])];
}

function logger(value: unknown): PoolLogger | undefined {
  if (value === undefined) return undefined;
  const methods = ['info', 'warn', 'error'] as const;
  const methodless = () => methods.some((m) => typeof (value as Record<string, unknown>)[m] !== 'function');
  if (value === null || typeof value !== 'object' || readCallers('logger', methodless)) {
    throw new InvalidArgumentError(`Expected \`logger\` to have info, warn and error methods (pino's shape), got ${describe(value)}`);
  }
  return value as PoolLogger;
}

function boundedInteger(name: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || !(value >= 1 && value <= max)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an integer from 1 to ${max}, got ${describe(value)}`);
  }
  return value;
}

function positiveMillis(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || !(value > 0)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be a finite number > 0, got ${describe(value)}`);
  }
  return value;
}

function moduleUrl(handlers: unknown): string {
  if (handlers instanceof URL) return handlers.href;
  if (typeof handlers !== 'string' || handlers.trim() === '') {
    throw new InvalidArgumentError(`Expected \`handlers\` to be a module path or URL, got ${describe(handlers)}`);
  }
  if (/^(file|data):/.test(handlers)) return handlers;
  return pathToFileURL(isAbsolute(handlers) ? handlers : resolve(handlers)).href;
}
