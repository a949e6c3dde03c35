/**
 * One leasehold job as bull-board's job object: its fields under bull-board's
 * names (`toJSON`) and its buttons (retry, remove, promote, edit data) mapped onto the
 * calls leasehold has, or refused with the reason when it has none.
 */
import type { JobState, QueueJob, QueueJobJson } from '@bull-board/api/typings/app';
import { IllegalStateError, UnsupportedOperationError } from '../errors.js';
import { JobStatus, type JobView, type Payload } from '../types.js';
import { payloadText } from '../payload-text.js';
import { answerable } from './http-status.js';
import type { DashboardQueue } from './queue.js';
import { tabOf } from './statuses.js';

export class BoardJob implements QueueJob {
  readonly opts: { delay?: number } = {};
  readonly #view: JobView;
  readonly #queue: DashboardQueue;
  readonly #now: number;

  /** `view` as seen at `now` (which tells waiting from delayed). */
  constructor(view: JobView, queue: DashboardQueue, now: number) {
    this.#view = view;
    this.#queue = queue;
    this.#now = now;
  }

  /** bull-board's retry, allowed from its failed tab only (the adapter turns completed retries off): `retryDead`. */
  retry(): Promise<void> {
    return answerable(async () => {
      if (this.#view.status !== JobStatus.DEAD) {
        throw new IllegalStateError(`Job ${this.#view.id} is ${this.#view.status}: only a DEAD job can be retried`);
      }
      await this.#queue.retryDead(this.#view.id);
    });
  }

  /** bull-board's remove: leasehold deletes no job, so a PENDING job is cancelled and any other refused. */
  remove(): Promise<void> {
    return answerable(async () => {
      const { id, status } = this.#view;
      if (status === JobStatus.PENDING) {
        await this.#queue.cancel(id);
        return;
      }
      // bull-board reports it as "the job is active"; a running job is stopped by cancel, on purpose, not by the trash button.
      if (status === JobStatus.RUNNING) throw new IllegalStateError(`Job ${id} is RUNNING: the board removes only waiting and delayed jobs`);
      throw new UnsupportedOperationError(`Job ${id} is ${status}: leasehold deletes no job (finished jobs leave as capacity evicts them), and only a PENDING job can be cancelled`);
    });
  }

  /** bull-board's promote of a delayed job: `promote`, ready now (refused, 409, once the job is not PENDING). */
  promote(): Promise<void> {
    return answerable(async () => {
      await this.#queue.promote(this.#view.id);
    });
  }

  /**
   * bull-board's "edit data": `updatePayload` with the data as JSON text (a
   * string as it is, as the board shows a payload that is not JSON); refused,
   * 409, once the job is not PENDING.
   */
  updateData(data: unknown): Promise<void> {
    return answerable(async () => {
      await this.#queue.updatePayload(this.#view.id, typeof data === 'string' ? data : JSON.stringify(data ?? null));
    });
  }

  /** bull-board's "change delay" of a delayed job: `changeDelay` (the board sends its new runAt as a delay from now). */
  changeDelay(delayMillis: number): Promise<void> {
    return answerable(async () => {
      await this.#queue.changeDelay(this.#view.id, delayMillis);
    });
  }

  /** bull-board's "change priority": `changePriority`. */
  changePriority(options: { priority?: number }): Promise<void> {
    return answerable(async () => {
      await this.#queue.changePriority(this.#view.id, options?.priority as number);
    });
  }

  async getState(): Promise<JobState> {
    return tabOf(this.#view, this.#now) ?? 'unknown';
  }

  toJSON(): QueueJobJson {
    const view = this.#view;
    return {
      id: view.id,
      name: view.type,
      data: payloadData(view.payload),
      progress: boardProgress(view.progress),
      attemptsMade: view.attempts,
      // The board needs a number: a job restored from a journal that kept no submit time shows its runAt.
      timestamp: view.submittedAt ?? view.nextRunAt,
      // The latest lease's start (kept through a retry or a release, as bull-board keeps a retried job's); its finish.
      processedOn: view.startedAt,
      finishedOn: view.finishedAt,
      processedBy: view.workerId,
      failedReason: view.lastError ?? '',
      stacktrace: null,
      // A binary result by its length, as a binary payload (see payloadText): never a megabyte of numbers in JSON.
      returnvalue: view.result instanceof Uint8Array ? payloadText(view.result) : (view.result ?? null),
      priority: view.priority,
      opts: {
        priority: view.priority,
        // 0: not known (a journal read without the app's policy); the board then shows none rather than a guess.
        ...(view.maxAttempts === 0 ? {} : { attempts: view.maxAttempts }),
        runAt: view.nextRunAt,
        ...(view.leaseUntil === null ? {} : { leaseUntil: view.leaseUntil }),
        ...(view.key === null ? {} : { key: view.key }),
        ...(view.timeoutMillis === null ? {} : { timeoutMillis: view.timeoutMillis }),
        ...(view.group === null ? {} : { group: view.group }),
        ...(view.status === JobStatus.CANCELLED ? { cancelled: true } : {}),
      },
    };
  }
}

/**
 * A job's progress as bull-board shows it: a number only as the ring on the
 * job's card (a percentage; its Progress tab then says "no progress"), an
 * object `{ progress }` both as that ring and as JSON on the Progress tab.
 * No progress: 0, which shows neither.
 */
function boardProgress(progress: number | undefined): number | { progress: number } {
  return progress === undefined ? 0 : { progress };
}

/** A JSON payload as its value, so the board shows it as data; any other string as it is. */
function payloadData(payload: Payload): unknown {
  if (typeof payload !== 'string') return payloadText(payload);
  try {
    return JSON.parse(payload);
  } catch {
    return payload;
  }
}
