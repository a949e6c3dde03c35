/**
 * Validation at the edge, shared by every backend: a bad argument is refused
 * with InvalidArgumentError (or JobNotFoundError for an id that cannot be
 * one) before anything changes.
 */
import type { TimeSource } from '../clock.js';
import { JobStatus, type JobQuery, type RateLimit } from '../types.js';
import { InvalidArgumentError, JobNotFoundError, describe, thrownText } from '../errors.js';
import { MAX_SPAN_MILLIS, MAX_TYPE_BYTES, given, readCallers, readOptions } from '../options.js';
import { RetryPolicy } from '../policy.js';
import { MAX_ATTEMPTS, MAX_KEY_BYTES, MAX_LEASE_LENGTH } from '../shm/memory/layout.js';
import { CronExpressionParser } from 'cron-parser';
import { cadenceOf, firstAtOrAfter } from '../schedule/cadence.js';
import type { ScheduleOptions, ScheduleSpec, StoredSchedule } from '../schedule/spec.js';
import { DEFAULT_SCHEDULER_INTERVAL_MILLIS, warnOfSchedulerError, type SchedulerOptions } from '../schedule/timer.js';

/** A job for `submit` / `submitMany`, checked. */
export interface CheckedJob {
  type: string;
  typeBytes: number;
  payload: string;
  payloadBytes: number;
  priority: number;
  /** undefined: `delayMillis` after now. */
  runAtMillis: number | undefined;
  /** How long after the submit's `now` the job may first run, when no runAt is given (0: at once). */
  delayMillis: number;
  /** The job's own maxAttempts; 0: the policy's. */
  maxAttempts: number;
  /** The idempotent key, or null for none. */
  key: string | null;
  /** The key's UTF-8 bytes (0: no key). */
  keyBytes: number;
  /** How long the key stays taken after the job finished; 0: not at all. */
  keyTtlMillis: number;
  /** The job's own lease length; 0: the poll's. */
  timeoutMillis: number;
  /** The job's headers, a copy of submit's; null for none. */
  headers: Record<string, string> | null;
  /** Their JSON text (what the queue stores); null for none. */
  headersText: string | null;
}

/** The options form of `submit(type, payload, options)`; each job of `submitMany` takes them too. */
export interface SubmitOptions {
  /** Higher runs first. @default 0 */
  priority?: number;
  /** The time (by the queue's TimeSource) the job may first run. Not with `delayMillis`. @default now */
  runAt?: number;
  /** Milliseconds after the submit the job may first run. Not with `runAt`. @default 0 */
  delayMillis?: number;
  /** The attempts this job gets, in place of the RetryPolicy's `maxAttempts` (1 to 2^32 - 1). @default the policy's */
  maxAttempts?: number;
  /**
   * An idempotent key (1 to 256 UTF-8 bytes): while a job submitted with the
   * same key is PENDING or RUNNING (or, with `keyTtlMillis`, finished less
   * than that long ago), the submit returns that job's id and changes nothing.
   * @default none
   */
  key?: string;
  /** How long after its job finished (SUCCEEDED, DEAD or CANCELLED) the key stays taken; only with `key`. @default 0 */
  keyTtlMillis?: number;
  /**
   * The length of each lease a poll gives this job, in place of the poll's
   * `leaseMillis` (an integer from 1 to 2^32 - 1): the job's own wins. `extend` takes the length it is given.
   * @default the poll's leaseMillis
   */
  timeoutMillis?: number;
  /**
   * String metadata that travels with the job (a trace context, a tenant, a
   * correlation id): stored with it, given back in its Lease and JobView.
   * At most MAX_HEADERS_BYTES bytes of JSON. @default none
   */
  headers?: Record<string, string>;
}

/** The most UTF-8 bytes a job's headers take as JSON. */
export const MAX_HEADERS_BYTES = 4096;

/** A job for `submitMany`: its type and payload, and the options of `submit` (or the positional form's `runAtMillis`). */
export interface NewJob extends SubmitOptions {
  type: string;
  payload?: string | null;
  /** The same as `runAt`, by the positional form's name. @default now */
  runAtMillis?: number;
}

const SUBMIT_OPTIONS: ReadonlySet<string> = new Set(['priority', 'runAt', 'delayMillis', 'maxAttempts', 'key', 'keyTtlMillis', 'timeoutMillis', 'headers']);
const NEW_JOB_FIELDS: ReadonlySet<string> = new Set(['type', 'payload', 'runAtMillis', ...SUBMIT_OPTIONS]);

export interface FailOptions {
  /**
   * Dead-letter the job now, whatever attempts it has left.
   * @default false
   */
  permanent?: boolean;
}

const FAIL_OPTIONS: ReadonlySet<string> = new Set(['permanent']);

/** A span of time: a number from 0 (or, `positive`, above 0) to MAX_SPAN_MILLIS. */
export function checkSpan(name: string, value: unknown, positive = false): asserts value is number {
  if (typeof value !== 'number' || !(positive ? value > 0 : value >= 0) || !(value <= MAX_SPAN_MILLIS)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be a number ${positive ? '> 0' : '>= 0'} and at most 2^53 - 1, got ${describe(value)}`);
  }
}

/** Digits of an id's number at most ("J" and up to 16 digits, no leading zero). */
const JOB_ID_DIGITS = 16;
const CODE_J = 0x4a;
const CODE_0 = 0x30;

/**
 * A job of `submit`: the positional form (`priority`, `runAtMillis`) or the
 * options form (an object in `priority`'s place, then nothing after it).
 */
export function checkSubmit(type: unknown, payload: unknown, priorityOrOptions: unknown, runAtMillis: unknown, maxPayloadBytes: number): CheckedJob {
  if (priorityOrOptions === null || typeof priorityOrOptions !== 'object') {
    return checkJob(type, payload, priorityOrOptions, runAtMillis, maxPayloadBytes);
  }
  const options = readOptions<SubmitOptions>('options', priorityOrOptions, SUBMIT_OPTIONS);
  if (runAtMillis !== undefined) {
    throw new InvalidArgumentError(`Expected nothing after submit's \`options\` (give runAt in them), got ${describe(runAtMillis)}`);
  }
  return checkOptions('options', options, type, payload, undefined, maxPayloadBytes);
}

/**
 * A job given as `type`, `payload` and `options` (an object whose keys the
 * caller checked), where `runAtMillis` (submitMany's older name) stands for runAt.
 */
function checkOptions(name: string, options: object, type: unknown, payload: unknown, runAtMillis: unknown, maxPayloadBytes: number): CheckedJob {
  const { priority = 0, runAt, delayMillis, maxAttempts, key, keyTtlMillis, timeoutMillis, headers } = options as SubmitOptions;
  const times = [runAt, runAtMillis, delayMillis].filter((time) => time !== undefined).length;
  if (times > 1) {
    throw new InvalidArgumentError(`Expected \`${name}\` to give at most one of runAt (or runAtMillis) and delayMillis, got ${times}`);
  }
  if (delayMillis !== undefined) checkSpan('delayMillis', delayMillis);
  if (maxAttempts !== undefined && (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS)) {
    throw new InvalidArgumentError(`Expected \`maxAttempts\` to be an integer from 1 to ${MAX_ATTEMPTS}, got ${describe(maxAttempts)}`);
  }
  if (timeoutMillis !== undefined && (!Number.isInteger(timeoutMillis) || timeoutMillis < 1 || timeoutMillis > MAX_LEASE_LENGTH)) {
    throw new InvalidArgumentError(`Expected \`timeoutMillis\` to be an integer from 1 to ${MAX_LEASE_LENGTH}, got ${describe(timeoutMillis)}`);
  }
  const job = checkJob(type, payload, priority, given(runAt, runAtMillis), maxPayloadBytes, runAt === undefined ? 'runAtMillis' : 'runAt');
  job.delayMillis = delayMillis ?? 0;
  job.maxAttempts = maxAttempts ?? 0;
  job.timeoutMillis = timeoutMillis ?? 0;
  if (key !== undefined || keyTtlMillis !== undefined) checkKey(job, key, keyTtlMillis);
  if (headers !== undefined) setHeaders(job, checkHeaders(headers));
  return job;
}

/** An idempotent key and its TTL, into `job`. */
function checkKey(job: CheckedJob, key: unknown, keyTtlMillis: unknown): void {
  if (typeof key !== 'string' || key === '' || !key.isWellFormed() || Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new InvalidArgumentError(
      `Expected \`key\` to be a well-formed string of 1 to ${MAX_KEY_BYTES} UTF-8 bytes${keyTtlMillis === undefined ? '' : ' (keyTtlMillis needs one)'}, got ${describe(key)}`,
    );
  }
  if (keyTtlMillis !== undefined) checkSpan('keyTtlMillis', keyTtlMillis);
  job.key = key;
  job.keyBytes = Buffer.byteLength(key);
  job.keyTtlMillis = keyTtlMillis ?? 0;
}

/** Submit's `headers`, checked and copied: a plain object of string values, at most MAX_HEADERS_BYTES of JSON. */
function checkHeaders(headers: unknown): Record<string, string> {
  const prototype = headers === null || typeof headers !== 'object' ? undefined : readCallers('headers', () => Object.getPrototypeOf(headers) as unknown);
  if (prototype !== Object.prototype && prototype !== null) {
    throw new InvalidArgumentError(`Expected \`headers\` to be a plain object of strings, got ${describe(headers)}`);
  }
  const copy: Record<string, string> = {};
  for (const [key, value] of readCallers('headers', () => Object.entries(headers as object))) {
    if (typeof value !== 'string' || !value.isWellFormed() || !key.isWellFormed()) {
      throw new InvalidArgumentError(`Expected \`headers.${key}\` to be a well-formed string, got ${describe(value)}`);
    }
    copy[key] = value;
  }
  return copy;
}

/** Gives a checked job its `headers` (and their JSON text), refused when that text is over MAX_HEADERS_BYTES. */
export function setHeaders(job: CheckedJob, headers: Record<string, string>): void {
  const text = JSON.stringify(headers);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_HEADERS_BYTES) {
    throw new InvalidArgumentError(`Expected \`headers\` to be at most ${MAX_HEADERS_BYTES} bytes of JSON, got ${bytes}`);
  }
  job.headers = headers;
  job.headersText = text;
}

/** The headers a lease or view shows: the stored JSON text's object, or null for none. */
export function parsedHeaders(text: string | null | undefined): Record<string, string> | null {
  return text === null || text === undefined || text === '' ? null : (JSON.parse(text) as Record<string, string>);
}

export function checkJob(
  type: unknown, payload: unknown, priority: unknown, runAtMillis: unknown, maxPayloadBytes: number, runAtName = 'runAtMillis',
): CheckedJob {
  const typeBytes = checkType(type);
  const text = payload ?? '';
  if (typeof text !== 'string' || !text.isWellFormed()) {
    throw new InvalidArgumentError(`Expected \`payload\` to be a well-formed string, null or undefined, got ${describe(payload)}`);
  }
  const payloadBytes = Buffer.byteLength(text);
  if (payloadBytes > maxPayloadBytes) {
    throw new InvalidArgumentError(`Expected \`payload\` to be at most ${maxPayloadBytes} UTF-8 bytes (maxPayloadBytes), got ${payloadBytes}`);
  }
  if (typeof priority !== 'number' || !Number.isInteger(priority)) {
    throw new InvalidArgumentError(`Expected \`priority\` to be an integer, got ${describe(priority)}`);
  }
  if (runAtMillis !== undefined && (typeof runAtMillis !== 'number' || !Number.isFinite(runAtMillis))) {
    throw new InvalidArgumentError(`Expected \`${runAtName}\` to be a finite number, got ${describe(runAtMillis)}`);
  }
  return {
    type: type as string, typeBytes, payload: text, payloadBytes, priority, runAtMillis, delayMillis: 0, maxAttempts: 0, key: null, keyBytes: 0, keyTtlMillis: 0, timeoutMillis: 0,
    headers: null, headersText: null,
  };
}

/** Job types checked before, with their UTF-8 bytes: a type is checked once (every submit names one), up to this many types. */
const CHECKED_TYPES = new Map<string, number>();
const MAX_CHECKED_TYPES = 4096;

/** A job type: a non-blank, well-formed string of at most MAX_TYPE_BYTES. Its UTF-8 bytes. */
function checkType(type: unknown): number {
  const checked = typeof type === 'string' ? CHECKED_TYPES.get(type) : undefined;
  if (checked !== undefined) return checked;
  if (typeof type !== 'string' || type.trim() === '') {
    throw new InvalidArgumentError(`Expected \`type\` to be a non-blank string, got ${describe(type)}`);
  }
  const typeBytes = Buffer.byteLength(type);
  if (typeBytes > MAX_TYPE_BYTES || !type.isWellFormed()) {
    throw new InvalidArgumentError(`Expected \`type\` to be a well-formed string of at most ${MAX_TYPE_BYTES} UTF-8 bytes`);
  }
  if (CHECKED_TYPES.size < MAX_CHECKED_TYPES) CHECKED_TYPES.set(type, typeBytes);
  return typeBytes;
}

/** Checks every job of a batch before any is stored. */
export function checkJobs(jobs: unknown, maxPayloadBytes: number): CheckedJob[] {
  if (!Array.isArray(jobs)) throw new InvalidArgumentError(`Expected \`jobs\` to be an array, got ${describe(jobs)}`);
  return readCallers('jobs', () => {
    // Every index, not `map`: a hole of a sparse array is a slot without a job, which `map` would skip.
    const out = new Array<CheckedJob>(jobs.length);
    for (let i = 0; i < jobs.length; i++) {
      if (!(i in jobs)) throw new InvalidArgumentError(`Expected \`jobs[${i}]\` to be an object, got a hole (a sparse array)`);
      const fields = readOptions<NewJob>(`jobs[${i}]`, jobs[i], NEW_JOB_FIELDS);
      out[i] = checkOptions(`jobs[${i}]`, fields, fields.type, fields.payload, fields.runAtMillis, maxPayloadBytes);
    }
    return out;
  });
}

export function checkWorkerId(workerId: unknown): asserts workerId is string {
  if (typeof workerId !== 'string' || workerId.trim() === '') {
    throw new InvalidArgumentError(`Expected \`workerId\` to be a non-blank string, got ${describe(workerId)}`);
  }
}

/** The threadId of a thread that has exited: a positive integer (the main thread, 0, cannot have), and not the caller's own. */
export function checkExitedThread(exited: unknown, own: number): asserts exited is number {
  if (typeof exited !== 'number' || !Number.isSafeInteger(exited) || exited < 1) {
    throw new InvalidArgumentError(`Expected \`threadId\` to be the threadId of a worker thread that exited (an integer >= 1), got ${describe(exited)}`);
  }
  if (exited === own) throw new InvalidArgumentError(`threadId ${exited} is the calling thread's own: it has not exited`);
}

export function checkLeaseMillis(leaseMillis: unknown): asserts leaseMillis is number {
  checkSpan('leaseMillis', leaseMillis, true);
}

/** The most jobs one batched Redis call (pollMany, completeManyAndPoll) leases or completes: it bounds a script's length. */
export const MAX_BATCH = 1000;

/** A batch size: an integer from `min` to `max`. */
export function checkBatchSize(name: string, value: unknown, min: number, max: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
}

/** The job number of an id `J<n>`; anything else is an id no job has. */
export function parseJobId(jobId: unknown): number {
  const n = typeof jobId === 'string' ? jobNumberOf(jobId) : MALFORMED;
  if (n === MALFORMED) throw new JobNotFoundError(`No job with id ${describe(jobId)}: ids look like "J1"`);
  if (!Number.isSafeInteger(n)) throw new JobNotFoundError(`No job with id ${describe(jobId)}`);
  return n;
}

const MALFORMED = -1;

/**
 * The n of `J<n>` (1 to 16 digits, no leading zero), or MALFORMED; read
 * digit by digit, as it runs on every complete: cheaper than a RegExp and a
 * slice. Beyond 2^53 the sum is inexact, and no longer a safe integer.
 */
function jobNumberOf(id: string): number {
  const length = id.length;
  if (length < 2 || length > 1 + JOB_ID_DIGITS || id.charCodeAt(0) !== CODE_J || id.charCodeAt(1) === CODE_0) return MALFORMED;
  let n = 0;
  for (let i = 1; i < length; i++) {
    const digit = id.charCodeAt(i) - CODE_0;
    if (!(digit >= 0 && digit <= 9)) return MALFORMED;
    n = n * 10 + digit;
  }
  return n;
}

/** What `fail` takes as the attempt's error: its text, an Error (whose message is kept), or none. */
export type FailError = string | Error | null;

/** Whether `value` is an Error, of this realm or another (a `vm` context's): what `fail` takes the message of. */
function isError(value: unknown): value is Error {
  return value instanceof Error || Object.prototype.toString.call(value) === '[object Error]';
}

/** An Error's text for lastError: its message, or its name when the message is empty (or cannot be read). */
function errorText(error: Error): string {
  const read = (field: 'message' | 'name'): string => {
    try {
      const value: unknown = error[field];
      return typeof value === 'string' ? value : '';
    } catch {
      return '';
    }
  };
  return read('message') || read('name') || thrownText(error);
}

/** The arguments of `fail`, checked: the error text (an Error's message) cut to `maxErrorBytes` (null: none given). */
export function checkFailure(error: unknown, options: FailOptions | undefined, maxErrorBytes: number): { text: string | null; permanent: boolean } {
  const reason = isError(error) ? errorText(error) : error;
  if (reason !== undefined && reason !== null && typeof reason !== 'string') {
    throw new InvalidArgumentError(`Expected \`error\` to be a string, an Error, null or undefined, got ${describe(error)}`);
  }
  const permanent = options === undefined ? false : given(readOptions<FailOptions>('options', options, FAIL_OPTIONS).permanent, false);
  if (typeof permanent !== 'boolean') {
    throw new InvalidArgumentError(`Expected \`permanent\` to be a boolean, got ${describe(permanent)}`);
  }
  return { text: reason === undefined || reason === null ? null : truncate(reason, maxErrorBytes), permanent };
}

/**
 * A complete's result as the queue stores it: its JSON text, or null for
 * none (`undefined`). Refused with InvalidArgumentError when JSON.stringify
 * throws (a cycle, a BigInt) or gives no text (a function, a symbol), or the
 * text is over `maxResultBytes` UTF-8 bytes.
 */
export function resultText(result: unknown, maxResultBytes: number): string | null {
  if (result === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(result);
  } catch (error) {
    throw new InvalidArgumentError(`Expected \`result\` to be a JSON-serializable value, got ${describe(result)}: ${thrownText(error)}`);
  }
  if (text === undefined) throw new InvalidArgumentError(`Expected \`result\` to be a JSON-serializable value, got ${describe(result)}`);
  const bytes = text.length * 3 <= maxResultBytes ? text.length : Buffer.byteLength(text);
  if (bytes > maxResultBytes) {
    throw new InvalidArgumentError(`Expected \`result\` to be at most ${maxResultBytes} bytes of JSON (maxResultBytes), got ${Buffer.byteLength(text)}`);
  }
  return text;
}

/** The parsed result a view shows: the JSON text's value, or undefined for none. */
export function parsedResult(text: string | null | undefined): unknown {
  return text === null || text === undefined || text === '' ? undefined : JSON.parse(text);
}

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

export function checkTimeSource(time: unknown): asserts time is TimeSource {
  if (time === null || typeof time !== 'object' || typeof readCallers('time', () => (time as Partial<TimeSource>).now) !== 'function') {
    throw new InvalidArgumentError(`Expected \`time\` to be a TimeSource with a now() method, got ${describe(time)}`);
  }
}

export function checkPolicy(policy: unknown): asserts policy is RetryPolicy {
  if (!readCallers('policy', () => policy instanceof RetryPolicy)) {
    throw new InvalidArgumentError(`Expected \`policy\` to be a RetryPolicy, got ${describe(policy)}`);
  }
}

/** Longest queue name, in UTF-8 bytes. */
export const MAX_QUEUE_NAME_BYTES = 256;

/**
 * A queue name shared by the processes that use one queue: non-blank, at most
 * MAX_QUEUE_NAME_BYTES, without braces (a Redis backend wraps it in a hash tag).
 */
export function checkQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.trim() === '' || /[{}]/.test(name) || !name.isWellFormed() ||
      Buffer.byteLength(name) > MAX_QUEUE_NAME_BYTES) {
    throw new InvalidArgumentError(
      `Expected \`name\` to be a non-blank string of at most ${MAX_QUEUE_NAME_BYTES} UTF-8 bytes without { or }, got ${describe(name)}`,
    );
  }
}

/** A reading of `time`, checked: a TimeSource that returns garbage, or throws, is refused before the call changes anything. */
export function readNow(time: TimeSource): number {
  let now: unknown;
  try {
    now = time.now();
  } catch (error) {
    // The call has changed nothing yet: it reads the clock before anything else.
    throw new InvalidArgumentError(`Expected the TimeSource to return a finite number, but it threw: ${thrownText(error)}`);
  }
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new InvalidArgumentError(`Expected the TimeSource to return a finite number, got ${describe(now)}`);
  }
  return now;
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes, at a character boundary. */
function truncate(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return text;
  const bytes = Buffer.from(text);
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end);
}

/** The largest `max` and `windowMillis` of a rate limit (Redis keeps them as integers; a shared-memory word holds them exactly). */
export const MAX_RATE_LIMIT = 2 ** 31 - 1;
const RATE_LIMIT_KEYS: ReadonlySet<string> = new Set(['max', 'windowMillis']);

/** The arguments of `setRateLimit(type, limit)`: the limit, or null to remove the type's. */
export function checkRateLimit(type: unknown, limit: unknown): RateLimit | null {
  checkType(type);
  if (limit === null) return null;
  if (typeof limit !== 'object' || Array.isArray(limit)) {
    throw new InvalidArgumentError(`Expected \`limit\` to be { max, windowMillis } or null, got ${describe(limit)}`);
  }
  const { max, windowMillis } = readOptions<RateLimit>('limit', limit, RATE_LIMIT_KEYS);
  for (const [name, value] of [['max', max], ['windowMillis', windowMillis]] as const) {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_RATE_LIMIT) {
      throw new InvalidArgumentError(`Expected \`${name}\` to be an integer from 1 to ${MAX_RATE_LIMIT}, got ${describe(value)}`);
    }
  }
  return { max: max!, windowMillis: windowMillis! };
}

// ── jobs(): the query, and its cursor (the number of the last job a page looked at) ──

/** The most jobs one page holds. */
export const MAX_PAGE = 1000;
export const DEFAULT_PAGE = 100;
/**
 * The most jobs one type-filtered call looks at: a page of a rare type among
 * many others comes back short (even empty) with a `next`, so that no call
 * holds the queue for long.
 */
export const SCAN_BUDGET = 1000;

/** A query, checked: `after` is the job number to go on after (0: from the start). */
export interface CheckedQuery {
  status: JobStatus | undefined;
  type: string | undefined;
  limit: number;
  after: number;
}

const QUERY_FIELDS: ReadonlySet<string> = new Set(['status', 'type', 'limit', 'after']);
const STATUSES: ReadonlySet<unknown> = new Set(Object.values(JobStatus));
const CURSOR_PREFIX = 'after:';

export function checkJobQuery(query: unknown): CheckedQuery {
  if (query === undefined) return { status: undefined, type: undefined, limit: DEFAULT_PAGE, after: 0 };
  const { status, type, limit = DEFAULT_PAGE, after } = readOptions<JobQuery>('query', query, QUERY_FIELDS);
  if (status !== undefined && !STATUSES.has(status)) {
    throw new InvalidArgumentError(`Expected \`status\` to be one of ${[...STATUSES].join(', ')}, got ${describe(status)}`);
  }
  if (type !== undefined && (typeof type !== 'string' || type.trim() === '')) {
    throw new InvalidArgumentError(`Expected \`type\` to be a non-blank string, got ${describe(type)}`);
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new InvalidArgumentError(`Expected \`limit\` to be an integer from 1 to ${MAX_PAGE}, got ${describe(limit)}`);
  }
  return { status, type, limit, after: after === undefined ? 0 : parseCursor(after) };
}

/** The cursor of a page that ends at job number `n`: opaque to users, and the same on every backend. */
export function cursorAfter(n: number): string {
  return Buffer.from(CURSOR_PREFIX + n).toString('base64url');
}

/** The job number a cursor from `cursorAfter` goes on after. */
export function parseCursor(cursor: unknown): number {
  const bad = () => new InvalidArgumentError(`Expected \`after\` to be the \`next\` of a page of jobs(), got ${describe(cursor)}`);
  if (typeof cursor !== 'string') throw bad();
  const text = Buffer.from(cursor, 'base64url').toString();
  if (!text.startsWith(CURSOR_PREFIX) || cursorAfter(Number(text.slice(CURSOR_PREFIX.length))) !== cursor) throw bad();
  try {
    return parseJobId(`J${text.slice(CURSOR_PREFIX.length)}`);
  } catch {
    throw bad();
  }
}

/** Longest schedule name, in UTF-8 bytes: its ticks' keys (`schedule:<name>:<tick>`) must stay within a key's 256. */
export const MAX_SCHEDULE_NAME_BYTES = 200;
const SCHEDULE_OPTIONS: ReadonlySet<string> = new Set([
  'cron', 'everyMillis', 'timeZone', 'type', 'payload', 'priority', 'maxAttempts', 'missed', 'maxMissed', 'graceMillis', 'startAt',
]);
const MISSED_TICKS: ReadonlySet<unknown> = new Set(['one', 'all', 'none']);
const DEFAULT_MAX_MISSED = 100;
const MOST_MISSED = 10_000;
const DEFAULT_GRACE_MILLIS = 60_000;

export function checkScheduleName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name === '' || !name.isWellFormed() || Buffer.byteLength(name) > MAX_SCHEDULE_NAME_BYTES) {
    throw new InvalidArgumentError(`Expected \`name\` to be a well-formed string of 1 to ${MAX_SCHEDULE_NAME_BYTES} UTF-8 bytes, got ${describe(name)}`);
  }
}

/**
 * A schedule's definition, checked and filled in, and its first tick at or
 * after `now`: a cron expression cron-parser refuses, an unknown time zone,
 * both or neither of cron and everyMillis, or a cadence with no tick left
 * is refused.
 */
export function checkSchedule(name: unknown, options: unknown, now: number, maxPayloadBytes: number): StoredSchedule {
  checkScheduleName(name);
  const asked = readOptions<ScheduleOptions>('options', options, SCHEDULE_OPTIONS);
  const { cron, everyMillis, timeZone, maxAttempts, missed = 'one', maxMissed = DEFAULT_MAX_MISSED, graceMillis = DEFAULT_GRACE_MILLIS } = asked;
  if ((cron === undefined) === (everyMillis === undefined)) {
    throw new InvalidArgumentError(`Expected \`options\` to give exactly one of cron and everyMillis, got ${cron === undefined ? 'neither' : 'both'}`);
  }
  if (everyMillis !== undefined && (!Number.isSafeInteger(everyMillis) || everyMillis < 1)) {
    throw new InvalidArgumentError(`Expected \`everyMillis\` to be an integer >= 1, got ${describe(everyMillis)}`);
  }
  if (timeZone !== undefined) checkTimeZone(timeZone, cron);
  if (cron !== undefined) checkCron(cron, timeZone);
  const job = checkJob(asked.type, asked.payload, given(asked.priority, 0), undefined, maxPayloadBytes);
  if (maxAttempts !== undefined && (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS)) {
    throw new InvalidArgumentError(`Expected \`maxAttempts\` to be an integer from 1 to ${MAX_ATTEMPTS}, got ${describe(maxAttempts)}`);
  }
  if (!MISSED_TICKS.has(missed)) {
    throw new InvalidArgumentError(`Expected \`missed\` to be 'one', 'all' or 'none', got ${describe(missed)}`);
  }
  if (!Number.isInteger(maxMissed) || maxMissed < 1 || maxMissed > MOST_MISSED) {
    throw new InvalidArgumentError(`Expected \`maxMissed\` to be an integer from 1 to ${MOST_MISSED}, got ${describe(maxMissed)}`);
  }
  checkSpan('graceMillis', graceMillis);
  const startAt = given(asked.startAt, everyMillis === undefined ? now : now + everyMillis);
  if (typeof startAt !== 'number' || !Number.isFinite(startAt)) {
    throw new InvalidArgumentError(`Expected \`startAt\` to be a finite number, got ${describe(startAt)}`);
  }
  const spec: ScheduleSpec = {
    cron: cron ?? null, everyMillis: everyMillis ?? null, timeZone: timeZone ?? null, startAt, type: job.type,
    payload: asked.payload ?? null, priority: job.priority, maxAttempts: maxAttempts ?? null, missed, maxMissed, graceMillis,
  };
  // Ticks before the schedule was made are not missed ones: it starts at now at the earliest.
  const nextTick = firstAtOrAfter(cadenceOf(spec), Math.max(startAt, now));
  if (nextTick === undefined) throw new InvalidArgumentError(`Expected \`cron\` to tick after now, got ${describe(cron)}, which never does again`);
  return { name, spec, nextTick };
}

/** Definitions storedSpec has checked, by their text: a cron in a time zone takes about a millisecond to check. */
const checkedSpecs = new Map<string, ScheduleSpec>();
/** Past this many, checkedSpecs starts afresh: definitions change only with a `schedule` call. */
const CHECKED_SPECS = 1024;

/**
 * A schedule's definition as a store kept it (its JSON text), checked as
 * `schedule` checks a new one; undefined if it is not one (a damaged store).
 */
export function storedSpec(text: unknown): ScheduleSpec | undefined {
  if (typeof text !== 'string') return undefined;
  const known = checkedSpecs.get(text);
  if (known !== undefined) return known;
  let checked: ScheduleSpec;
  try {
    const spec = JSON.parse(text) as Record<string, unknown>;
    // Its options again (the fields a spec leaves null left out), ticking from its own start, as it did when made.
    const options = Object.fromEntries([...SCHEDULE_OPTIONS].filter((field) => spec[field] !== null && spec[field] !== undefined).map((field) => [field, spec[field]]));
    checked = checkSchedule('stored', options, spec.startAt as number, Infinity).spec;
  } catch {
    return undefined;
  }
  if (checkedSpecs.size >= CHECKED_SPECS) checkedSpecs.clear();
  checkedSpecs.set(text, checked);
  return checked;
}

function checkTimeZone(timeZone: unknown, cron: unknown): void {
  if (cron === undefined) throw new InvalidArgumentError('Expected `timeZone` only with `cron` (an interval has no time zone)');
  let known = typeof timeZone === 'string' && timeZone !== '';
  try {
    // Intl knows the IANA zones of this Node; an unknown one is a RangeError.
    if (known) new Intl.DateTimeFormat('en-US', { timeZone: timeZone as string });
  } catch {
    known = false;
  }
  if (!known) throw new InvalidArgumentError(`Expected \`timeZone\` to be an IANA time zone such as 'Europe/Paris', got ${describe(timeZone)}`);
}

function checkCron(cron: unknown, timeZone: string | undefined): void {
  if (typeof cron !== 'string' || cron.trim() === '') {
    throw new InvalidArgumentError(`Expected \`cron\` to be a cron expression, got ${describe(cron)}`);
  }
  try {
    CronExpressionParser.parse(cron, { tz: timeZone ?? 'UTC' });
  } catch (error) {
    throw new InvalidArgumentError(`Expected \`cron\` to be a cron expression, got ${describe(cron)}: ${(error as Error).message}`);
  }
}

const SCHEDULER_OPTIONS: ReadonlySet<string> = new Set(['intervalMillis', 'onError']);

/** startScheduler's options, checked and filled in. */
export function checkSchedulerOptions(options: unknown): Required<SchedulerOptions> {
  const { intervalMillis = DEFAULT_SCHEDULER_INTERVAL_MILLIS, onError = warnOfSchedulerError } = readOptions<SchedulerOptions>('options', given(options, {}), SCHEDULER_OPTIONS);
  if (!Number.isInteger(intervalMillis) || intervalMillis < 1) {
    throw new InvalidArgumentError(`Expected \`intervalMillis\` to be an integer >= 1, got ${describe(intervalMillis)}`);
  }
  if (onError !== undefined && typeof onError !== 'function') {
    throw new InvalidArgumentError(`Expected \`onError\` to be a function, got ${describe(onError)}`);
  }
  return { intervalMillis, onError };
}

