/** `setConcurrency`'s arguments. */
import { InvalidArgumentError, describe } from '../errors.js';
import { checkGroup, checkType } from './job-input.js';
import { checkIntegerIn } from './numbers.js';

/** The largest cap (a shared-memory Int32 word holds it, and Redis an integer). */
export const MAX_CONCURRENCY = 2 ** 31 - 1;

/** A checked `setConcurrency` call: `type` undefined for the whole queue's cap; `max` null to remove it. */
export interface ConcurrencyArgs {
  readonly type: string | undefined;
  readonly max: number | null;
}

/**
 * The arguments of `setConcurrency(max)` (the whole queue) or
 * `setConcurrency(type, max)` (one job type): `max` an integer from 1 to
 * 2^31 - 1, or null to remove the cap.
 */
export function checkConcurrency(args: readonly unknown[]): ConcurrencyArgs {
  if (args.length === 0 || args.length > 2) {
    throw new InvalidArgumentError(`Expected setConcurrency(max) or setConcurrency(type, max), got ${args.length} arguments`);
  }
  const type = args.length === 2 ? args[0] : undefined;
  const max = args.length === 2 ? args[1] : args[0];
  if (args.length === 2) checkType(type);
  if (max === null) return { type: type as string | undefined, max: null };
  if (max === undefined) throw new InvalidArgumentError(`Expected \`max\` to be an integer from 1 to ${MAX_CONCURRENCY} or null, got ${describe(max)}`);
  checkIntegerIn('max', max, 1, MAX_CONCURRENCY);
  return { type: type as string | undefined, max };
}

/** A checked `setGroupConcurrency` call: `max` null to remove the group's cap. */
export interface GroupConcurrencyArgs {
  readonly group: string;
  readonly max: number | null;
}

/** The arguments of `setGroupConcurrency(group, max)`: a group's name, and `max` an integer from 1 to 2^31 - 1 or null. */
export function checkGroupConcurrency(args: readonly unknown[]): GroupConcurrencyArgs {
  if (args.length !== 2) throw new InvalidArgumentError(`Expected setGroupConcurrency(group, max), got ${args.length} arguments`);
  const [group, max] = args;
  checkGroup(group);
  if (max === null) return { group: group as string, max: null };
  if (max === undefined) throw new InvalidArgumentError(`Expected \`max\` to be an integer from 1 to ${MAX_CONCURRENCY} or null, got ${describe(max)}`);
  checkIntegerIn('max', max, 1, MAX_CONCURRENCY);
  return { group: group as string, max };
}
