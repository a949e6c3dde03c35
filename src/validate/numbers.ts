/** Numbers in a range, as many arguments of the queue take them. */
import { InvalidArgumentError, describe } from '../errors.js';
import { MAX_SPAN_MILLIS } from '../options.js';

/** A span of time: a number from 0 (or, `positive`, above 0) to MAX_SPAN_MILLIS. */
export function checkSpan(name: string, value: unknown, positive = false): asserts value is number {
  if (typeof value !== 'number' || !(positive ? value > 0 : value >= 0) || !(value <= MAX_SPAN_MILLIS)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be a number ${positive ? '> 0' : '>= 0'} and at most 2^53 - 1, got ${describe(value)}`);
  }
}

/** An integer from `min` to `max`. */
export function checkIntegerIn(name: string, value: unknown, min: number, max: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
}
