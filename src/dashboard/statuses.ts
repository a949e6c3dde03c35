/**
 * How leasehold's statuses show on bull-board's tabs. bull-board has more
 * tabs than leasehold has statuses (prioritized, paused) and no tab for one
 * of ours (CANCELLED): see docs/dashboard.md.
 *
 *   PENDING, waiting for its children  waiting-children (a flow's parent, see submitFlow)
 *   PENDING, runAt <= now  waiting
 *   PENDING, runAt >  now  delayed
 *   RUNNING                active
 *   SUCCEEDED              completed
 *   DEAD                   failed
 *   CANCELLED              (no tab; counted in the queue's description)
 */
import { JobStatus, type JobView, type QueueStats } from '../types.js';

/** The bull-board tabs a leasehold queue fills, in the order the board shows them. */
export const BOARD_STATUSES = ['active', 'waiting', 'waiting-children', 'delayed', 'failed', 'completed'] as const;
export type BoardStatus = (typeof BOARD_STATUSES)[number];

/** Every status bull-board knows (its `STATUSES`), for the counts it expects: the ones leasehold never fills are 0. */
const ALL_BOARD_STATUSES = ['latest', 'active', 'waiting', 'waiting-children', 'prioritized', 'completed', 'failed', 'delayed', 'paused'] as const;
export type BoardCounts = Record<(typeof ALL_BOARD_STATUSES)[number], number>;

/** The leasehold status whose jobs a tab lists (waiting and delayed both list PENDING jobs, told apart by runAt). */
export const STATUS_OF_TAB = {
  waiting: JobStatus.PENDING,
  'waiting-children': JobStatus.PENDING,
  delayed: JobStatus.PENDING,
  active: JobStatus.RUNNING,
  completed: JobStatus.SUCCEEDED,
  failed: JobStatus.DEAD,
} as const satisfies Record<BoardStatus, JobStatus>;

/** The tab a job shows on at `now`; undefined for a CANCELLED job, which has none. */
export function tabOf(view: Pick<JobView, 'status' | 'nextRunAt' | 'waitingChildren'>, now: number): BoardStatus | undefined {
  switch (view.status) {
    case JobStatus.PENDING: return view.waitingChildren !== undefined ? 'waiting-children' : view.nextRunAt <= now ? 'waiting' : 'delayed';
    case JobStatus.RUNNING: return 'active';
    case JobStatus.SUCCEEDED: return 'completed';
    case JobStatus.DEAD: return 'failed';
    case JobStatus.CANCELLED: return undefined;
  }
}

/** `stats()` as bull-board's counts per tab. */
export function boardCounts(stats: QueueStats): BoardCounts {
  const counts = Object.fromEntries(ALL_BOARD_STATUSES.map((status) => [status, 0])) as BoardCounts;
  counts.waiting = stats.ready;
  // A flow's waiting parents are DELAYED in the counts (stats' `delayed` holds them): they have their own tab.
  const waitingChildren = stats.waitingChildren ?? 0;
  counts['waiting-children'] = waitingChildren;
  counts.delayed = stats.delayed - waitingChildren;
  counts.active = stats.running;
  counts.completed = stats.succeeded;
  counts.failed = stats.dead;
  return counts;
}
