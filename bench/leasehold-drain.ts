/**
 * One timed drain of a prefilled leasehold queue, by parked worker threads
 * released at a barrier (drain-worker.mjs) or by the main thread itself; the
 * loop is drain-loop.mjs's in both. Used by the "drain" and "work" suites.
 */
import { performance } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import * as dist from '../dist/index.js';
import { type DrainCounts, type DrainLoop, drainQueue } from './drain-loop.mjs';
import { MiB } from './conditions.js';
import { runAtBarrier } from './threads.js';

/**
 * The built library a drain runs, on the main thread (which fills the queue)
 * and in its workers (which must load the same build: see drain-worker.mjs):
 * `dist/` unless compare-builds.ts puts another build beside it.
 */
export interface Build {
  readonly library: Pick<typeof dist, 'JobQueue' | 'RetryPolicy' | 'systemClock'>;
}

export const DIST: Build = { library: dist };

export interface DrainSettings {
  /** Which build fills the queue; the workers given must have loaded the same one. `dist/` if absent. */
  readonly build?: Build;
  readonly jobs: number;
  readonly loop: DrainLoop;
  /** Busy-work steps per job between its lease and its complete (drain-loop.mjs `spin`); 0 for no-op jobs. */
  readonly spinIterations: number;
}

/** Room for every job of a drain, and arena for them; each run gets a fresh queue. */
export function drainOptions(jobs: number) {
  return { capacity: jobs, arenaBytes: 32 * MiB } as const;
}

/**
 * How the threads of a drain get their jobs: all from one queue (what a user
 * runs), or each from a queue of its own with its share of the jobs, so that
 * no memory is shared at all: the rate this machine allows threads doing the
 * same calls, the ceiling of the shared case.
 */
export type Sharing = 'one queue' | 'a queue each';

/** What a case's name says of its sharing: nothing for one queue (the case measured), the ceiling's words otherwise. */
export function sharingLabel(sharing: Sharing): string {
  return sharing === 'a queue each' ? ', a queue each (no memory shared)' : '';
}

/** Milliseconds from the barrier's release until the last of `workers` has drained its queue. */
export async function drainWithThreads(workers: readonly Worker[], settings: DrainSettings, notes: string[], sharing: Sharing = 'one queue'): Promise<number> {
  const build = settings.build ?? DIST;
  const queues = sharing === 'one queue' ? [prefilled(build, settings.jobs)] : workers.map(() => prefilled(build, settings.jobs / workers.length));
  try {
    const { millis, replies } = await runAtBarrier<DrainCounts & { error: string | null }>(
      workers,
      (i) => ({ handle: queues[i % queues.length]!.share(), loop: settings.loop, spinIterations: settings.spinIterations }),
      'drain worker',
    );
    // Each queue against the replies of the threads that drained it (worker i drained queue i % queues).
    queues.forEach((queue, q) => {
      const mine = replies.filter((_, i) => i % queues.length === q);
      check(`${workers.length} thread(s)${sharingLabel(sharing)}, ${settings.loop}, queue ${q + 1} of ${queues.length}`, queue, mine, settings.jobs / queues.length, notes);
    });
    return millis;
  } finally {
    for (const queue of queues) queue.close();
  }
}

/**
 * Milliseconds the main thread takes to drain the queue alone, no worker
 * thread involved: the queue shared (as the threads' drains get it, its
 * handle taken before the clock starts), or exclusive (never shared: see
 * Exclusive queues in src/shm/memory/layout.ts).
 */
export function drainOnMainThread(settings: DrainSettings, notes: string[], shared: boolean): number {
  const queue = prefilled(settings.build ?? DIST, settings.jobs);
  if (shared) queue.share();
  try {
    const start = performance.now();
    const counts = drainQueue(queue, 'main', settings.loop, settings.spinIterations);
    const millis = performance.now() - start;
    check(`main thread, ${shared ? 'shared' : 'exclusive'} queue, ${settings.loop}`, queue, [counts], settings.jobs, notes);
    return millis;
  } finally {
    queue.close();
  }
}

/** A fresh queue holding `jobs` no-op jobs, submitted before the clock starts. */
function prefilled({ library }: Build, jobs: number): dist.JobQueue {
  const queue = new library.JobQueue(library.systemClock, new library.RetryPolicy(3, 100, 1_000), drainOptions(jobs));
  for (let i = 0; i < jobs; i++) queue.submit('noop', '');
  return queue;
}

/** Notes a drain that did not complete every job exactly once, or whose polls came back empty while jobs were pending. */
function check(what: string, queue: dist.JobQueue, counts: readonly DrainCounts[], jobs: number, notes: string[]): void {
  const completed = counts.reduce((sum, count) => sum + count.completed, 0);
  const emptyPolls = counts.reduce((sum, count) => sum + count.emptyPolls, 0);
  const { succeeded } = queue.stats();
  if (completed !== jobs || succeeded !== jobs) notes.push(`${what}: completed ${completed}, stats.succeeded ${succeeded}, expected ${jobs}`);
  if (emptyPolls > 0) notes.push(`${what}: poll returned nothing while jobs were pending (${emptyPolls} times in a run)`);
}
