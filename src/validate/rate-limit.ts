/** `setRateLimit`'s arguments. */
import type { RateLimit } from '../types.js';
import { InvalidArgumentError, describe } from '../errors.js';
import { readOptions } from '../options.js';
import { checkType } from './job-input.js';
import { checkIntegerIn } from './numbers.js';

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
    checkIntegerIn(name, value, 1, MAX_RATE_LIMIT);
  }
  return { max: max!, windowMillis: windowMillis! };
}
