/** `jobs()`: the query, and its cursor (the number of the last job a page looked at). */
import { JobStatus, type JobQuery } from '../types.js';
import { InvalidArgumentError, describe } from '../errors.js';
import { readOptions } from '../options.js';
import { parseJobId } from './job-id.js';
import { checkIntegerIn } from './numbers.js';

/** The most jobs one page holds. */
export const MAX_PAGE = 1000;
export const DEFAULT_PAGE = 100;
/**
 * The most jobs one type-filtered call looks at: a page of a rare type among
 * many others comes back short (even empty) with a `next`, so that no call
 * holds the queue for long.
 */
export const SCAN_BUDGET = 1000;

/** A query, checked: `after` is the job number to go on after (0: from the start). */
export interface CheckedQuery {
  status: JobStatus | undefined;
  type: string | undefined;
  limit: number;
  after: number;
}

const QUERY_FIELDS: ReadonlySet<string> = new Set(['status', 'type', 'limit', 'after']);
const STATUSES: ReadonlySet<unknown> = new Set(Object.values(JobStatus));
const CURSOR_PREFIX = 'after:';

export function checkJobQuery(query: unknown): CheckedQuery {
  if (query === undefined) return { status: undefined, type: undefined, limit: DEFAULT_PAGE, after: 0 };
  const { status, type, limit = DEFAULT_PAGE, after } = readOptions<JobQuery>('query', query, QUERY_FIELDS);
  if (status !== undefined && !STATUSES.has(status)) {
    throw new InvalidArgumentError(`Expected \`status\` to be one of ${[...STATUSES].join(', ')}, got ${describe(status)}`);
  }
  if (type !== undefined && (typeof type !== 'string' || type.trim() === '')) {
    throw new InvalidArgumentError(`Expected \`type\` to be a non-blank string, got ${describe(type)}`);
  }
  checkIntegerIn('limit', limit, 1, MAX_PAGE);
  return { status, type, limit, after: after === undefined ? 0 : parseCursor(after) };
}

/** The cursor of a page that ends at job number `n`: opaque to users, and the same on every backend. */
export function cursorAfter(n: number): string {
  return Buffer.from(CURSOR_PREFIX + n).toString('base64url');
}

/** The job number a cursor from `cursorAfter` goes on after. */
export function parseCursor(cursor: unknown): number {
  const bad = () => new InvalidArgumentError(`Expected \`after\` to be the \`next\` of a page of jobs(), got ${describe(cursor)}`);
  if (typeof cursor !== 'string') throw bad();
  const text = Buffer.from(cursor, 'base64url').toString();
  if (!text.startsWith(CURSOR_PREFIX) || cursorAfter(Number(text.slice(CURSOR_PREFIX.length))) !== cursor) throw bad();
  try {
    return parseJobId(`J${text.slice(CURSOR_PREFIX.length)}`);
  } catch {
    throw bad();
  }
}
