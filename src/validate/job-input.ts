/**
 * Jobs as `submit` and `submitMany` take them: type, payload, priority,
 * runAt or delay, attempts, lease length, idempotent key and headers.
 * Validation at the edge, shared by every backend: a bad argument is refused
 * with InvalidArgumentError before anything changes.
 */
import { InvalidArgumentError, describe } from '../errors.js';
import { MAX_TYPE_BYTES, given, readCallers, readOptions } from '../options.js';
import { MAX_ATTEMPTS, MAX_KEY_BYTES, MAX_LEASE_LENGTH, NAME_BYTES } from '../shm/memory/layout.js';
import { checkIntegerIn, checkSpan } from './numbers.js';
import type { Payload } from '../types.js';

/** A job for `submit` / `submitMany`, checked. */
export interface CheckedJob {
  type: string;
  typeBytes: number;
  payload: Payload;
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
  /** With the key: a PENDING holder's payload is replaced and its runAt pushed to now + this (see Maintenance#debounce); 0: no debounce. */
  debounceMillis: number;
  /** With the key: it is taken for this long from its holder's submit, whatever the holder's status; 0: no throttle. */
  throttleMillis: number;
  /** The job's own lease length; 0: the poll's. */
  timeoutMillis: number;
  /** The job's headers, a copy of submit's; null for none. */
  headers: Record<string, string> | null;
  /** Their JSON text (what the queue stores); null for none. */
  headersText: string | null;
  /** The job's group (submit's `group`), or null for none. */
  group: string | null;
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
   * Debounce on `key` (milliseconds, > 0): while the key's holder is PENDING,
   * the submit replaces its payload and pushes its runAt to now + this, and
   * returns its id; otherwise it makes a new job that runs this long after
   * now. Only with `key`; not with runAt, delayMillis, keyTtlMillis or
   * throttleMillis, nor in submitMany. @default none
   */
  debounceMillis?: number;
  /**
   * Throttle on `key` (milliseconds, > 0): the key is taken for this long
   * from its holder's submit, whatever the holder's status, and free after
   * it: at most one job per window. Only with `key`; not with keyTtlMillis
   * or debounceMillis. @default none
   */
  throttleMillis?: number;
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
  /**
   * The job's group (a tenant, a customer: a non-blank string of at most 124
   * UTF-8 bytes). Groups take fair turns at the poll, and
   * `setGroupConcurrency(group, max)` caps the group's RUNNING jobs. An
   * in-memory or journaled queue names at most 4096 groups over its life.
   * Not on the Redis backends yet. @default none
   */
  group?: string;
}

/** The most UTF-8 bytes of a group's name (an entry of the queue's group table). */
export const MAX_GROUP_BYTES = NAME_BYTES;

/** The most UTF-8 bytes a job's headers take as JSON. */
export const MAX_HEADERS_BYTES = 4096;

/** A job for `submitMany`: its type and payload, and the options of `submit` (or the positional form's `runAtMillis`). */
export interface NewJob extends SubmitOptions {
  type: string;
  payload?: Payload | null;
  /** The same as `runAt`, by the positional form's name. @default now */
  runAtMillis?: number;
}

const SUBMIT_OPTIONS: ReadonlySet<string> = new Set([
  'priority', 'runAt', 'delayMillis', 'maxAttempts', 'key', 'keyTtlMillis', 'debounceMillis', 'throttleMillis', 'timeoutMillis', 'headers', 'group',
]);
const NEW_JOB_FIELDS: ReadonlySet<string> = new Set(['type', 'payload', 'runAtMillis', ...SUBMIT_OPTIONS]);

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
  const { priority = 0, runAt, delayMillis, maxAttempts, key, keyTtlMillis, debounceMillis, throttleMillis, timeoutMillis, headers, group } = options as SubmitOptions;
  const times = [runAt, runAtMillis, delayMillis].filter((time) => time !== undefined).length;
  if (times > 1) {
    throw new InvalidArgumentError(`Expected \`${name}\` to give at most one of runAt (or runAtMillis) and delayMillis, got ${times}`);
  }
  if (delayMillis !== undefined) checkSpan('delayMillis', delayMillis);
  if (maxAttempts !== undefined) checkIntegerIn('maxAttempts', maxAttempts, 1, MAX_ATTEMPTS);
  if (timeoutMillis !== undefined) checkIntegerIn('timeoutMillis', timeoutMillis, 1, MAX_LEASE_LENGTH);
  const job = checkJob(type, payload, priority, given(runAt, runAtMillis), maxPayloadBytes, runAt === undefined ? 'runAtMillis' : 'runAt');
  job.delayMillis = delayMillis ?? 0;
  job.maxAttempts = maxAttempts ?? 0;
  job.timeoutMillis = timeoutMillis ?? 0;
  if (key !== undefined || keyTtlMillis !== undefined || debounceMillis !== undefined || throttleMillis !== undefined) {
    const needer = keyTtlMillis !== undefined ? 'keyTtlMillis' : debounceMillis !== undefined ? 'debounceMillis' : throttleMillis !== undefined ? 'throttleMillis' : undefined;
    checkKey(job, key, keyTtlMillis, needer);
  }
  if (debounceMillis !== undefined || throttleMillis !== undefined) checkKeyWindows(name, job, options as SubmitOptions);
  if (headers !== undefined) setHeaders(job, checkHeaders(headers));
  if (group !== undefined) job.group = checkGroup(group);
  return job;
}

/**
 * Names a check has passed, each with its UTF-8 bytes, remembered up to
 * MAX_PASSED_NAMES: every submit names a job type (and, in a grouped queue,
 * a group) among few, and a name's string scans are most of what checking it
 * costs, so each is checked once.
 */
class PassedNames {
  readonly #bytes = new Map<string, number>();

  /** The UTF-8 bytes of `name` if it passed before, else undefined. */
  bytesOf(name: unknown): number | undefined {
    return typeof name === 'string' ? this.#bytes.get(name) : undefined;
  }

  remember(name: string, bytes: number): void {
    if (this.#bytes.size < MAX_PASSED_NAMES) this.#bytes.set(name, bytes);
  }
}
const MAX_PASSED_NAMES = 4096;

const PASSED_GROUPS = new PassedNames();

/** A group's name: a non-blank, well-formed string of at most MAX_GROUP_BYTES UTF-8 bytes. */
export function checkGroup(group: unknown): string {
  if (PASSED_GROUPS.bytesOf(group) !== undefined) return group as string;
  const bytes = typeof group === 'string' ? Buffer.byteLength(group) : 0;
  if (typeof group !== 'string' || group.trim() === '' || !group.isWellFormed() || bytes > MAX_GROUP_BYTES) {
    throw new InvalidArgumentError(`Expected \`group\` to be a non-blank, well-formed string of at most ${MAX_GROUP_BYTES} UTF-8 bytes, got ${describe(group)}`);
  }
  PASSED_GROUPS.remember(group, bytes);
  return group;
}

/** An idempotent key and its TTL, into `job`. */
function checkKey(job: CheckedJob, key: unknown, keyTtlMillis: unknown, needer: string | undefined): void {
  if (typeof key !== 'string' || key === '' || !key.isWellFormed() || Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new InvalidArgumentError(
      `Expected \`key\` to be a well-formed string of 1 to ${MAX_KEY_BYTES} UTF-8 bytes${needer === undefined ? '' : ` (${needer} needs one)`}, got ${describe(key)}`,
    );
  }
  if (keyTtlMillis !== undefined) checkSpan('keyTtlMillis', keyTtlMillis);
  job.key = key;
  job.keyBytes = Buffer.byteLength(key);
  job.keyTtlMillis = keyTtlMillis ?? 0;
}

/**
 * Debounce or throttle (the key is checked): a positive finite window, one
 * of the two, not with keyTtlMillis; a debounce sets the new job's runAt
 * itself, so it takes no runAt or delayMillis either.
 */
function checkKeyWindows(name: string, job: CheckedJob, options: SubmitOptions): void {
  const { debounceMillis, throttleMillis } = options;
  if (debounceMillis !== undefined && throttleMillis !== undefined) {
    throw new InvalidArgumentError(`Expected \`${name}\` to give at most one of debounceMillis and throttleMillis`);
  }
  const option = debounceMillis !== undefined ? 'debounceMillis' : 'throttleMillis';
  const window = debounceMillis ?? throttleMillis;
  if (typeof window !== 'number' || !Number.isFinite(window) || window <= 0) {
    throw new InvalidArgumentError(`Expected \`${option}\` to be a finite number > 0, got ${describe(window)}`);
  }
  if (options.keyTtlMillis !== undefined) {
    throw new InvalidArgumentError(`Expected \`${name}\` to give at most one of keyTtlMillis and ${option} (each says how long the key stays taken)`);
  }
  if (debounceMillis !== undefined) {
    if (options.runAt !== undefined || options.delayMillis !== undefined || (options as NewJob).runAtMillis !== undefined) {
      throw new InvalidArgumentError(`Expected \`${name}\` to give no runAt or delayMillis with debounceMillis (the job runs debounceMillis after the last submit)`);
    }
    job.debounceMillis = debounceMillis;
    job.delayMillis = debounceMillis;
  } else {
    job.throttleMillis = window;
  }
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
  const value = payload ?? '';
  const payloadBytes = checkPayloadBytes(value, maxPayloadBytes);
  checkPriority(priority);
  if (runAtMillis !== undefined && (typeof runAtMillis !== 'number' || !Number.isFinite(runAtMillis))) {
    throw new InvalidArgumentError(`Expected \`${runAtName}\` to be a finite number, got ${describe(runAtMillis)}`);
  }
  return {
    type: type as string, typeBytes, payload: value as Payload, payloadBytes, priority, runAtMillis, delayMillis: 0, maxAttempts: 0, key: null, keyBytes: 0, keyTtlMillis: 0, debounceMillis: 0, throttleMillis: 0, timeoutMillis: 0,
    headers: null, headersText: null, group: null,
  };
}

/**
 * A payload as submit takes it, `payload ?? ''` (null and undefined are
 * ''): a well-formed string of at most `maxPayloadBytes` UTF-8 bytes, or a
 * Uint8Array (a Buffer is one) of at most `maxPayloadBytes` bytes. Its bytes.
 * Other views (a DataView, an Int32Array) and ArrayBuffers are refused: a
 * caller says which bytes it means by passing a Uint8Array over them.
 */
export function checkPayloadBytes(payload: unknown, maxPayloadBytes: number): number {
  if (payload instanceof Uint8Array) {
    if (payload.length > maxPayloadBytes) {
      throw new InvalidArgumentError(`Expected \`payload\` to be at most ${maxPayloadBytes} bytes (maxPayloadBytes), got a Uint8Array of ${payload.length}`);
    }
    return payload.length;
  }
  if (typeof payload !== 'string' || !payload.isWellFormed()) {
    throw new InvalidArgumentError(`Expected \`payload\` to be a well-formed string, a Uint8Array, null or undefined, got ${describe(payload)}`);
  }
  const bytes = Buffer.byteLength(payload);
  if (bytes > maxPayloadBytes) {
    throw new InvalidArgumentError(`Expected \`payload\` to be at most ${maxPayloadBytes} UTF-8 bytes (maxPayloadBytes), got ${bytes}`);
  }
  return bytes;
}

/** A job's priority: an integer. */
export function checkPriority(priority: unknown): asserts priority is number {
  if (typeof priority !== 'number' || !Number.isInteger(priority)) {
    throw new InvalidArgumentError(`Expected \`priority\` to be an integer, got ${describe(priority)}`);
  }
}

const PASSED_TYPES = new PassedNames();

/** A job type: a non-blank, well-formed string of at most MAX_TYPE_BYTES. Its UTF-8 bytes. */
export function checkType(type: unknown): number {
  const checked = PASSED_TYPES.bytesOf(type);
  if (checked !== undefined) return checked;
  if (typeof type !== 'string' || type.trim() === '') {
    throw new InvalidArgumentError(`Expected \`type\` to be a non-blank string, got ${describe(type)}`);
  }
  const typeBytes = Buffer.byteLength(type);
  if (typeBytes > MAX_TYPE_BYTES || !type.isWellFormed()) {
    throw new InvalidArgumentError(`Expected \`type\` to be a well-formed string of at most ${MAX_TYPE_BYTES} UTF-8 bytes`);
  }
  PASSED_TYPES.remember(type, typeBytes);
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
      // A debounce edits a job the batch could not undo with the rest (and two of one key in a batch would edit one job twice).
      if (out[i]!.debounceMillis > 0) throw new InvalidArgumentError(`Expected \`jobs[${i}]\` to have no debounceMillis: submitMany does not debounce (use submit)`);
    }
    return out;
  });
}
