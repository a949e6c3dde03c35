import type { JobQueue } from '../dist/index.js';

/** How a drain takes its next job: `poll` after each `complete`, or both in one `completeAndPoll`. */
export type DrainLoop = 'plain' | 'completeAndPoll';

export interface DrainCounts {
  readonly completed: number;
  /** Polls that found nothing while jobs were still pending. */
  readonly emptyPolls: number;
  /** The busy work's result, reported so that it cannot be optimized away. */
  readonly sink: number;
}

export function spin(iterations: number): number;
export function drainQueue(queue: JobQueue, workerId: string, loop: DrainLoop, spinIterations: number): DrainCounts;
