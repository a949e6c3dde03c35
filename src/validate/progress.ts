/** What a lease holder reports of its job while it runs: its progress. */
import { InvalidArgumentError, describe } from '../errors.js';

/** A progress value: any finite number (a percentage, a count of items done: the handler's own scale). */
export function checkProgress(value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(`Expected \`progress\` to be a finite number, got ${describe(value)}`);
  }
}
