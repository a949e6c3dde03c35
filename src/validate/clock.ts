/** The queue's TimeSource: checked when given, and each reading checked before a call changes anything. */
import type { TimeSource } from '../clock.js';
import { InvalidArgumentError, describe, thrownText } from '../errors.js';
import { readCallers } from '../options.js';

export function checkTimeSource(time: unknown): asserts time is TimeSource {
  if (time === null || typeof time !== 'object' || typeof readCallers('time', () => (time as Partial<TimeSource>).now) !== 'function') {
    throw new InvalidArgumentError(`Expected \`time\` to be a TimeSource with a now() method, got ${describe(time)}`);
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
