import { CronExpressionParser, type CronExpression } from 'cron-parser';

/**
 * When a schedule's ticks fall: a cron expression in a time zone, or a fixed
 * interval from an anchor. Times are milliseconds by the queue's clock; a
 * cron tick is a whole second (cron-parser's resolution).
 */
export interface Cadence {
  /** The first tick strictly after `time`, or undefined if there is none. */
  after(time: number): number | undefined;
  /** The last tick at or before `time`, or undefined if there is none. */
  atOrBefore(time: number): number | undefined;
}

/** What a cadence is made from: a schedule's stored definition. */
export interface CadenceSpec {
  readonly cron: string | null;
  readonly everyMillis: number | null;
  readonly timeZone: string | null;
  /** An interval's ticks are startAt + k × everyMillis, k = 0, 1, ...; a cron's are those at or after startAt. */
  readonly startAt: number;
}

export function cadenceOf(spec: CadenceSpec): Cadence {
  return spec.cron === null ? intervalCadence(spec.startAt, spec.everyMillis!) : cronCadence(spec.cron, spec.timeZone, spec.startAt);
}

/** The first tick at or after `time`. */
export function firstAtOrAfter(cadence: Cadence, time: number): number | undefined {
  const before = cadence.atOrBefore(time);
  return before === time ? time : cadence.after(time);
}

function intervalCadence(anchor: number, every: number): Cadence {
  return {
    after: (time) => (time < anchor ? anchor : anchor + (Math.floor((time - anchor) / every) + 1) * every),
    atOrBefore: (time) => (time < anchor ? undefined : anchor + Math.floor((time - anchor) / every) * every),
  };
}

function cronCadence(cron: string, timeZone: string | null, startAt: number): Cadence {
  const parse = (currentDate: number): CronExpression =>
    CronExpressionParser.parse(cron, { currentDate: new Date(currentDate), tz: timeZone ?? 'UTC' });
  // cron-parser throws once it finds no further tick (an expression that can never match again).
  const step = (expression: CronExpression, forward: boolean): number | undefined => {
    if (forward ? !expression.hasNext() : !expression.hasPrev()) return undefined;
    return (forward ? expression.next() : expression.prev()).getTime();
  };
  return {
    // A tick at startAt itself counts: the search starts a millisecond before it.
    after: (time) => step(parse(Math.max(Math.floor(time), Math.ceil(startAt) - 1)), true),
    atOrBefore: (time) => {
      // prev() is strictly before its date: one millisecond on takes in a tick at `time` itself.
      const tick = step(parse(Math.floor(time) + 1), false);
      return tick === undefined || tick < startAt ? undefined : tick;
    },
  };
}
