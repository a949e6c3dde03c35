/** Schedules: a new one's definition, a stored one's, and the scheduler's options. */
import { CronExpressionParser } from 'cron-parser';
import { InvalidArgumentError, describe } from '../errors.js';
import { given, readOptions } from '../options.js';
import { MAX_ATTEMPTS } from '../shm/memory/layout.js';
import { cadenceOf, firstAtOrAfter } from '../schedule/cadence.js';
import type { ScheduleOptions, ScheduleSpec, StoredSchedule } from '../schedule/spec.js';
import { DEFAULT_SCHEDULER_INTERVAL_MILLIS, warnOfSchedulerError, type SchedulerOptions } from '../schedule/timer.js';
import { checkJob } from './job-input.js';
import { checkIntegerIn, checkSpan } from './numbers.js';

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
  // A schedule's definition is kept as JSON (in the journal, on Redis): its payload is text.
  if ((asked.payload as unknown) instanceof Uint8Array) throw new InvalidArgumentError('Expected a schedule\'s `payload` to be a string, null or undefined, got a Uint8Array: schedules keep text payloads only');
  const job = checkJob(asked.type, asked.payload, given(asked.priority, 0), undefined, maxPayloadBytes);
  if (maxAttempts !== undefined) checkIntegerIn('maxAttempts', maxAttempts, 1, MAX_ATTEMPTS);
  if (!MISSED_TICKS.has(missed)) {
    throw new InvalidArgumentError(`Expected \`missed\` to be 'one', 'all' or 'none', got ${describe(missed)}`);
  }
  checkIntegerIn('maxMissed', maxMissed, 1, MOST_MISSED);
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
