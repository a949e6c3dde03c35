/**
 * The one narrow interface between a WorkerPool and its queue, whichever
 * backend holds the jobs: the shared-memory JobQueue (journaled or not),
 * RedisJobQueue or PartitionedRedisQueue. Results may be plain values or Promises; the pool awaits
 * them either way, so there is one pool for every backend, not a copy each.
 */
import { JobQueue, type SharedQueueHandle } from '../queue.js';
import type { PartitionedQueueHandle } from '../redis/partitioned.js';
import type { BatchOutcome, Completion, RedisQueueHandle } from '../redis/queue.js';
import type { JobView, Lease, Payload, QueueStats } from '../types.js';
import type { SubmitOptions } from '../validate/job-input.js';
import type { FailError, FailOptions } from '../validate/outcome.js';
import type { FinishedOptions } from '../validate/waits.js';
import type { ReleaseOptions } from '../validate/pending-edits.js';

type Awaitable<T> = T | Promise<T>;

/** A handle a pool thread opens its own connection to the queue with (`share()` of either backend). */
export type QueueHandle = SharedQueueHandle | RedisQueueHandle | PartitionedQueueHandle;

/**
 * What the pool's main thread uses: a handle for the threads, counts for
 * drain/stats, `fail` to hand back a dead thread's jobs (and `view` to tell
 * what became of them), `release` to hand back the jobs a closing pool
 * could not wait for, `extend` and `progress` for jobs that report progress, `threadExited` to free a dead thread's rows; `submit`
 * and `finished` for `run`.
 */
export interface PoolQueue {
  share(): QueueHandle;
  submit(type: string, payload?: Payload | null, options?: SubmitOptions): Awaitable<string>;
  finished(jobId: string, options?: FinishedOptions): Promise<unknown>;
  stats(): Awaitable<QueueStats>;
  fail(jobId: string, token: number, error?: FailError, options?: FailOptions): Awaitable<void>;
  release(jobId: string, token: number): Awaitable<void>;
  /** Keeps the lease of a job whose handler reports progress (see progress-watch.ts). */
  extend(jobId: string, token: number, leaseMillis: number): Awaitable<number>;
  /** Writes the progress a job's handler reported, sampled once per tick (see progress-watch.ts). */
  progress(jobId: string, token: number, value: number): Awaitable<void>;
  /** Writes a handler's log line (`ctx.log`), sent by its thread with its events. */
  log(jobId: string, line: string): Awaitable<void>;
  view(jobId: string): Awaitable<JobView>;
  /** Frees what a thread that exited held in the queue (shared memory: its rows); absent where a thread holds nothing (Redis). */
  threadExited?(threadId: number): number;
}

/** What a pool thread uses: the worker side of the contract. */
export interface WorkerQueue {
  poll(workerId: string, leaseMillis: number): Awaitable<Lease | undefined>;
  /** `result`: the handler's return value (undefined: none). */
  complete(jobId: string, token: number, result?: unknown): Awaitable<void>;
  /** complete, then poll: one lock (shared memory) or one round trip (Redis) per job. */
  completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number, result?: unknown): Awaitable<Lease | undefined>;
  fail(jobId: string, token: number, error?: FailError, options?: FailOptions): Awaitable<void>;
  /** With `delayMillis`, a handler's snooze (see snooze.ts). */
  release(jobId: string, token: number, options?: ReleaseOptions): Awaitable<void>;
  /**
   * Makes a poll's lease durable before its handler runs, so that an attempt the
   * process dies in is counted; absent where every call already is (Redis).
   */
  flush?(): void;
  extend(jobId: string, token: number, leaseMillis: number): Awaitable<number>;
  /**
   * Batched claims, where each call is a round trip (Redis): up to `max`
   * leases in one call, and several completes with the next leases in one
   * call, each lease still checked and counted on its own. Absent where a
   * call costs no round trip (shared memory).
   */
  pollMany?(workerId: string, leaseMillis: number, max: number): Promise<Lease[]>;
  completeManyAndPoll?(done: readonly Completion[], workerId: string, leaseMillis: number, max: number): Promise<BatchOutcome>;
  waitForWork(timeoutMillis: number): Promise<boolean>;
  /**
   * Calls `heard` as RUNNING jobs are cancelled, by any thread or process,
   * until the function it gives is called: with the job's id where the
   * backend knows it (Redis), else with none (look at the jobs with `view`).
   * The pool aborts those jobs' signals. Absent: a cancel is heard only when
   * a heartbeat is refused.
   */
  watchCancels?(heard: (jobId?: string) => void): Awaitable<() => void>;
  /** Where a cancel is heard without a job id, or a complete is refused: what became of the job. */
  view?(jobId: string): Awaitable<JobView>;
  /**
   * As waitForWork, blocking the thread (Atomics.wait): for an idle thread, whose wake then costs no turn of its
   * event loop. Absent where waiting needs the event loop (Redis: a reply on a socket).
   */
  blockForWork?(timeoutMillis: number): boolean;
  /**
   * The poll of a thread `blockForWork` woke: a job ready lock-free, or nothing, with no locked look when the
   * lock-free one found nothing (the wake was for a job another thread took). Present where `blockForWork` is
   * (the pool calls it after every wake of blockForWork), absent where that is.
   */
  pollAfterWake?(workerId: string, leaseMillis: number): Lease | undefined;
  /** A flow's parent's children's results (see JobQueue#childResults). */
  childResults(parentId: string): Awaitable<Record<string, unknown>>;
  close(): Awaitable<void>;
}

/** Opens, in this thread, the queue `handle` names. Redis's client is loaded only by a thread that needs it. */
export async function openWorkerQueue(handle: QueueHandle): Promise<WorkerQueue> {
  if (handle.kind === 'leasehold/redis-queue') {
    const { RedisJobQueue } = await import('../redis/queue.js');
    return RedisJobQueue.attach(handle);
  }
  if (handle.kind === 'leasehold/partitioned-redis-queue') {
    const { PartitionedRedisQueue } = await import('../redis/partitioned.js');
    return PartitionedRedisQueue.attach(handle);
  }
  return JobQueue.attach(handle);
}

/** The name a pool thread's process spans carry for the queue `handle` names, or null when that queue is not traced. */
export function tracedName(handle: QueueHandle): string | null {
  const { tracing } = (handle.kind === 'leasehold/partitioned-redis-queue' ? handle.partitions[0]! : handle).options;
  return tracing === false ? null : tracing.name;
}
