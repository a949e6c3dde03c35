/** What happens to ticks that came while no scheduler ran (see planTicks). */
export type MissedTicks = 'one' | 'all' | 'none';

/** `schedule(name, options)`: when a repeatable job is made, and the job it makes. */
export interface ScheduleOptions {
  /** A cron expression (5 fields, or 6 with seconds first), read by cron-parser. Not with `everyMillis`. */
  cron?: string;
  /** A fixed interval: a tick every this many milliseconds (an integer >= 1). Not with `cron`. */
  everyMillis?: number;
  /** The IANA time zone a cron expression is read in (e.g. 'Europe/Paris'); only with `cron`. @default UTC */
  timeZone?: string;
  /** The type of each tick's job. */
  type: string;
  payload?: string | null;
  /** Each job's priority. @default 0 */
  priority?: number;
  /** Each job's own maxAttempts. @default the policy's */
  maxAttempts?: number;
  /** Ticks that came while no scheduler ran: 'one' job for the latest, 'all' (up to `maxMissed`), or 'none'. @default 'one' */
  missed?: MissedTicks;
  /** With missed 'all': the most jobs one late run makes for a schedule, for its latest ticks. @default 100 */
  maxMissed?: number;
  /** With missed 'none': how late a tick may be found and still make its job. @default 60000 */
  graceMillis?: number;
  /**
   * The first tick: an interval ticks at startAt, startAt + everyMillis, ...;
   * a cron at its first time at or after startAt. Ticks before the schedule
   * was made never fire. @default now + everyMillis (interval), now (cron)
   */
  startAt?: number;
}

/** A schedule's definition as stored, every default filled in. */
export interface ScheduleSpec {
  readonly cron: string | null;
  readonly everyMillis: number | null;
  readonly timeZone: string | null;
  readonly startAt: number;
  readonly type: string;
  readonly payload: string | null;
  readonly priority: number;
  readonly maxAttempts: number | null;
  readonly missed: MissedTicks;
  readonly maxMissed: number;
  readonly graceMillis: number;
}

/** A stored schedule: its name, definition, and the next tick no scheduler has fired yet (null: the cadence has no more). */
export interface StoredSchedule {
  readonly name: string;
  readonly spec: ScheduleSpec;
  readonly nextTick: number | null;
}

/** What `schedules()` lists: a schedule's definition, and its next tick. */
export interface ScheduleView extends ScheduleSpec {
  readonly name: string;
  readonly nextTick: number | null;
}

export function viewOf(schedule: StoredSchedule): ScheduleView {
  return { name: schedule.name, ...schedule.spec, nextTick: schedule.nextTick };
}

/** Schedules by name, as `schedules()` lists them. */
export function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Due schedules in the order `runSchedules` fires them, on every backend: the earliest next tick first, then by name. */
export function byDueTick(a: StoredSchedule, b: StoredSchedule): number {
  return a.nextTick! - b.nextTick! || byName(a, b);
}
