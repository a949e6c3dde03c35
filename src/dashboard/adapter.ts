/**
 * A bull-board queue adapter over any leasehold queue. It reads `stats()`
 * for the counts, `jobs()` for the lists and `view()` for one job, and maps
 * the board's actions onto leasehold's calls: retry of a failed job is
 * `retryDead`, remove of a waiting or delayed one is `cancel`, "clean" and
 * "empty" of the waiting and delayed tabs cancel those jobs, pause and
 * resume are the queue's, promote is `promote`. What leasehold does not have (deleting
 * finished jobs, concurrency, schedulers, metrics) is refused with
 * UnsupportedOperationError or reported empty; docs/dashboard.md lists it.
 *
 * bull-board exports its base class from a `dist` path only, so this module
 * loads bull-board; it is itself loaded on first use (see ./index.ts).
 */
import { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import type {
  AppJobScheduler, JobCleanStatus, JobSchedulerUpdateResult, JobStatus as BoardJobStatus, QueueJob, QueueJobOptions, QueueMetrics, Status,
} from '@bull-board/api/typings/app';
import type { TimeSource } from '../clock.js';
import { IllegalStateError, JobNotFoundError, UnsupportedOperationError } from '../errors.js';
import { BoardJob } from './board-job.js';
import { answerable } from './http-status.js';
import { jobsOfTabs, type DashboardQueue } from './queue.js';
import { BOARD_STATUSES, boardCounts, type BoardCounts, type BoardStatus } from './statuses.js';

export interface DashboardAdapterOptions {
  /**
   * The queue's name on the board (and in its URLs); unique on one board.
   * @default "default"
   */
  name?: string;
  /**
   * Only look: the board hides its action buttons, and bull-board refuses
   * every action on this queue. Pass `false` only behind your own access control.
   * @default true
   */
  readOnly?: boolean;
  /** A line under the queue's name on the board. */
  description?: string;
  /**
   * The clock that tells a waiting job (runAt reached) from a delayed one in
   * the lists: the queue's own (`stats()` splits its counts by it).
   * @default systemClock
   */
  time?: TimeSource;
}

/** The `type` bull-board is told: its features for Bull (not BullMQ's flows, schedulers and concurrency, which leasehold has not). */
const BOARD_TYPE = 'bull';

export class LeaseholdBoardAdapter extends BaseAdapter {
  readonly #queue: DashboardQueue;
  readonly #name: string;
  readonly #time: TimeSource;
  readonly #description: string;
  /** The CANCELLED count of the latest `getJobCounts`: they have no tab, so the description says how many there are. */
  #cancelled = 0;

  /** @internal Made by `createDashboardAdapter`, which checks the arguments. */
  constructor(queue: DashboardQueue, options: Required<Pick<DashboardAdapterOptions, 'name' | 'readOnly' | 'time'>> & { description: string }) {
    super(BOARD_TYPE, { readOnlyMode: options.readOnly, allowRetries: !options.readOnly, allowCompletedRetries: false, displayName: options.name });
    this.#queue = queue;
    this.#name = options.name;
    this.#time = options.time;
    this.#description = options.description;
  }

  getName(): string {
    return this.#name;
  }

  override getDescription(): string {
    const cancelled = this.#cancelled === 0 ? '' : `${this.#cancelled} cancelled (no tab on this board)`;
    return [this.#description, cancelled].filter((part) => part !== '').join(' · ');
  }

  getStatuses(): Status[] {
    return ['latest', ...BOARD_STATUSES];
  }

  getJobStatuses(): BoardJobStatus[] {
    return [...BOARD_STATUSES];
  }

  async getJobCounts(): Promise<BoardCounts> {
    const stats = await this.#queue.stats();
    this.#cancelled = stats.cancelled;
    return boardCounts(stats);
  }

  async getJobs(statuses: BoardJobStatus[], start = 0, end = Number.MAX_SAFE_INTEGER): Promise<QueueJob[]> {
    const tabs = statuses.filter((status): status is BoardStatus => (BOARD_STATUSES as readonly string[]).includes(status));
    if (tabs.length === 0) return [];
    const now = this.#time.now();
    const views = await jobsOfTabs(this.#queue, tabs, now, start, end);
    return views.map((view) => new BoardJob(view, this.#queue, now));
  }

  async getJob(id: string): Promise<QueueJob | undefined> {
    try {
      return new BoardJob(await this.#queue.view(id), this.#queue, this.#time.now());
    } catch (error) {
      // An unknown, malformed or evicted id: bull-board answers "job not found".
      if (error instanceof JobNotFoundError) return undefined;
      throw error;
    }
  }

  /** The board's "add job": a submit of type `name`, its data as the payload (JSON unless a string). */
  addJob(name: string, data: unknown, options: QueueJobOptions): Promise<QueueJob> {
    return answerable(async () => {
      const payload = typeof data === 'string' ? data : JSON.stringify(data ?? null);
      const id = await this.#queue.submit(name, payload, {
        ...(options.delay === undefined ? {} : { delayMillis: options.delay }),
        ...(options.attempts === undefined ? {} : { maxAttempts: options.attempts }),
      });
      return new BoardJob(await this.#queue.view(id), this.#queue, this.#time.now());
    });
  }

  async isPaused(): Promise<boolean> {
    return this.#queue.isPaused();
  }

  async pause(): Promise<void> {
    await this.#queue.pause();
  }

  async resume(): Promise<void> {
    await this.#queue.resume();
  }

  /**
   * "Clean" of the waiting or delayed tab cancels every job on it (they stay,
   * CANCELLED; the board's grace period is not applied). Finished jobs
   * are not deleted: leasehold keeps them until capacity evicts them.
   */
  clean(status: JobCleanStatus): Promise<void> {
    return answerable(async () => {
      if (status === 'wait' || status === 'delayed') return this.#cancelAll(status === 'wait' ? 'waiting' : 'delayed');
      throw new UnsupportedOperationError(`leasehold cannot clean the ${status} jobs: it deletes no job, and cancels only PENDING ones (waiting or delayed)`);
    });
  }

  /** "Empty": cancels every PENDING job, waiting and delayed. */
  empty(): Promise<void> {
    return answerable(() => this.#cancelAll('waiting', 'delayed'));
  }

  /**
   * One `cancel` per job, each its own call: a job that left the tab between
   * the listing and its cancel (it started running) is refused, and the
   * others are cancelled all the same; the refusals are reported at the end.
   */
  async #cancelAll(...tabs: BoardStatus[]): Promise<void> {
    const views = await jobsOfTabs(this.#queue, tabs, this.#time.now(), 0, Number.MAX_SAFE_INTEGER);
    const refused: string[] = [];
    for (const view of views) {
      try {
        await this.#queue.cancel(view.id);
      } catch (error) {
        if (!(error instanceof IllegalStateError)) throw error;
        refused.push(view.id);
      }
    }
    if (refused.length > 0) {
      throw new IllegalStateError(`Cancelled ${views.length - refused.length} of ${views.length} jobs: ${refused.join(', ')} had left the ${tabs.join(' and ')} tab (no longer PENDING)`);
    }
  }

  obliterate(): Promise<void> {
    return this.#unsupported('obliterate a queue: it deletes no job');
  }

  /** Every job of the delayed tab ready now, one `promote` each; a job that left the tab meanwhile is skipped. */
  promoteAll(): Promise<void> {
    return answerable(async () => {
      const views = await jobsOfTabs(this.#queue, ['delayed'], this.#time.now(), 0, Number.MAX_SAFE_INTEGER);
      for (const view of views) {
        try {
          await this.#queue.promote(view.id);
        } catch (error) {
          // Cancelled or run since the listing: nothing left to promote.
          if (!(error instanceof IllegalStateError)) throw error;
        }
      }
    });
  }

  /**
   * A job's log lines (`logs`), for its Logs tab: oldest first, after a line
   * that says how many older ones were dropped, if any. None for a queue
   * without logs (a journal read from disk: logs are not journaled) or a job
   * gone since the board listed it.
   */
  async getJobLogs(id: string): Promise<string[]> {
    if (this.#queue.logs === undefined) return [];
    try {
      const { lines, dropped } = await this.#queue.logs(id);
      return dropped > 0 ? [`(${dropped} older line${dropped === 1 ? '' : 's'} dropped)`, ...lines] : lines;
    } catch (error) {
      if (error instanceof JobNotFoundError) return [];
      throw error;
    }
  }

  /** bull-board swallows this refusal: the board shows no metrics chart. Prometheus metrics are `collectMetrics`'s. */
  getMetrics(): Promise<QueueMetrics> {
    return this.#unsupported('keep completed and failed counts per minute: see collectMetrics (Prometheus)');
  }

  /** No Redis INFO: a JobQueue has no Redis, and a RedisJobQueue's connection is its own. */
  async getRedisInfo(): Promise<string | null> {
    return null;
  }

  async getGlobalConcurrency(): Promise<number | null> {
    return null;
  }

  setGlobalConcurrency(): Promise<void> {
    return this.#unsupported('limit the concurrency of a queue: a WorkerPool sets its own `threads`');
  }

  async getJobSchedulers(): Promise<Omit<AppJobScheduler, 'queueName'>[]> {
    return [];
  }

  async getJobSchedulersCount(): Promise<number> {
    return 0;
  }

  async removeJobScheduler(): Promise<boolean> {
    return false;
  }

  async updateJobScheduler(): Promise<JobSchedulerUpdateResult> {
    return 'not-found';
  }

  async runJobSchedulerNow(): Promise<'not-found'> {
    return 'not-found';
  }

  #unsupported(what: string): Promise<never> {
    return answerable(async () => {
      throw new UnsupportedOperationError(`leasehold cannot ${what}`);
    });
  }
}
