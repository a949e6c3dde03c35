import { cadenceOf } from './cadence.js';
import type { NewJob } from '../validate/job-input.js';
import type { StoredSchedule } from './spec.js';

/** What a scheduler does about one schedule at `now`: the ticks to fire (oldest first), and the schedule's next tick after. */
export interface TickPlan {
  readonly ticks: readonly number[];
  /** The tick after `now`; null when the cadence has no more. */
  readonly next: number | null;
}

/**
 * The ticks of a schedule due at `now` (its next tick has come), by its
 * missed-tick policy:
 * - 'one': the latest due tick, one job, whatever came before it;
 * - 'all': every due tick, the latest `maxMissed` of them if more;
 * - 'none': the latest due tick only if it is at most `graceMillis` late
 *   (a scheduler running on time), else none: the schedule skips ahead.
 * undefined when nothing is due.
 */
export function planTicks(schedule: StoredSchedule, now: number): TickPlan | undefined {
  const first = schedule.nextTick;
  if (first === null || first > now) return undefined;
  const { spec } = schedule;
  const cadence = cadenceOf(spec);
  // The next tick is a tick of the cadence at or before now, so there is a latest.
  const latest = cadence.atOrBefore(now)!;
  const next = cadence.after(now) ?? null;
  if (spec.missed === 'one') return { ticks: [latest], next };
  if (spec.missed === 'none') return { ticks: now - latest <= spec.graceMillis ? [latest] : [], next };
  const ticks = [latest];
  for (let tick = latest; ticks.length < spec.maxMissed; ) {
    const earlier = cadence.atOrBefore(tick - 1);
    if (earlier === undefined || earlier < first) break;
    ticks.push((tick = earlier));
  }
  return { ticks: ticks.reverse(), next };
}

/** The idempotent key of a tick's job: every scheduler that fires this tick submits under it, so the tick makes one job. */
export function tickKey(name: string, tick: number): string {
  return `schedule:${name}:${tick}`;
}

/**
 * How long a tick's key stays taken after its job finished: a scheduler that
 * submitted the tick and stopped before advancing the schedule leaves it to
 * the next one, which must find the job by its key within this time.
 */
export const TICK_KEY_TTL_MILLIS = 24 * 60 * 60 * 1000;

/** The jobs of a schedule's ticks, for submitMany: each ready from its tick, under its tick's key. */
export function tickJobs(schedule: StoredSchedule, ticks: readonly number[]): NewJob[] {
  const { type, payload, priority, maxAttempts } = schedule.spec;
  return ticks.map((tick) => ({
    type, payload, priority, runAt: tick, key: tickKey(schedule.name, tick), keyTtlMillis: TICK_KEY_TTL_MILLIS,
    ...(maxAttempts === null ? {} : { maxAttempts }),
  }));
}
