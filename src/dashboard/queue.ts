/**
 * What the dashboard reads and does of a queue: the methods every backend
 * has alike (JobQueue in memory or journaled, RedisJobQueue,
 * PartitionedRedisQueue), each plain or a Promise. And the listing of one
 * or more of bull-board's tabs, page by page, from `jobs()`.
 */
import type { JobLogs, JobPage, JobQuery, JobView, QueueStats } from '../types.js';
import type { SubmitOptions } from '../validate/job-input.js';
import { STATUS_OF_TAB, tabOf, type BoardStatus } from './statuses.js';

type Awaitable<T> = T | Promise<T>;

export interface DashboardQueue {
  stats(): Awaitable<QueueStats>;
  jobs(query?: JobQuery): Awaitable<JobPage>;
  view(jobId: string): Awaitable<JobView>;
  /** A job's log; absent where none is kept (a journal read from disk). */
  logs?(jobId: string): Awaitable<JobLogs>;
  submit(type: string, payload?: string | null, options?: SubmitOptions): Awaitable<string>;
  retryDead(jobId: string): Awaitable<void>;
  cancel(jobId: string): Awaitable<void>;
  promote(jobId: string): Awaitable<void>;
  changeDelay(jobId: string, delayMillis: number): Awaitable<void>;
  changePriority(jobId: string, priority: number): Awaitable<void>;
  updatePayload(jobId: string, payload: string | null): Awaitable<void>;
  pause(): Awaitable<void>;
  resume(): Awaitable<void>;
  isPaused(): Awaitable<boolean>;
}

/** The most jobs one `jobs()` call returns (its `limit`'s top). */
const PAGE_LIMIT = 1000;

/**
 * The jobs of `tabs` at `now`, in submission order, from the `start`-th to
 * the `end`-th (both counted from 0, both included). One tab is listed by its
 * status; several (bull-board's "latest") by reading every job.
 */
export async function jobsOfTabs(queue: DashboardQueue, tabs: readonly BoardStatus[], now: number, start: number, end: number): Promise<JobView[]> {
  const wanted = new Set(tabs);
  const statuses = new Set(tabs.map((tab) => STATUS_OF_TAB[tab]));
  const [status] = statuses;
  const query: JobQuery = statuses.size === 1 ? { status, limit: PAGE_LIMIT } : { limit: PAGE_LIMIT };
  const found: JobView[] = [];
  let seen = 0;
  for (let after: string | null | undefined; after !== null;) {
    const page = await queue.jobs(after === undefined ? query : { ...query, after });
    for (const view of page.jobs) {
      const tab = tabOf(view, now);
      if (tab === undefined || !wanted.has(tab)) continue;
      if (seen >= start) found.push(view);
      seen++;
      if (seen > end) return found;
    }
    after = page.next;
  }
  return found;
}
