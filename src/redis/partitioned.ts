/**
 * One queue partitioned over several Redis queues, so over several hash
 * slots and, on a Redis Cluster, several masters: what one queue does when
 * one master's CPU is its limit.
 */
import type { SharedClock } from '../clock.js';
import { keyHash } from '../key-hash.js';
import { IllegalStateError, InvalidArgumentError, describe } from '../errors.js';
import { filledTracing, readOptions } from '../options.js';
import type { RetryPolicy, SharedPolicy } from '../policy.js';
import { byType, type ConcurrencyCaps, type GroupConcurrencyCap, type JobPage, type JobQuery, type JobView, type Lease, type Payload, type QueueStats, type RateLimit, type TypeRateLimit, type TypeRetryPolicy } from '../types.js';
import { checkConcurrency, checkGroupConcurrency } from '../validate/concurrency.js';
import type { ScheduleOptions, ScheduleView } from '../schedule/spec.js';
import { startScheduler, type Scheduler, type SchedulerOptions } from '../schedule/timer.js';
import { parseJobId } from '../validate/job-id.js';
import { checkJobs, checkSubmit, type NewJob, type SubmitOptions } from '../validate/job-input.js';
import { MAX_BATCH } from '../validate/lease.js';
import { checkIntegerIn } from '../validate/numbers.js';
import type { FailError, FailOptions } from '../validate/outcome.js';
import { checkJobQuery, cursorAfter, parseCursor } from '../validate/query.js';
import { checkRateLimit } from '../validate/rate-limit.js';
import { checkRetryPolicy } from '../validate/retry-policy.js';
import { checkSchedulerOptions } from '../validate/schedule.js';
import type { FinishedOptions } from '../validate/waits.js';
import type { ReleaseOptions } from '../validate/pending-edits.js';
import { QueueEvents, checkEventsOptions, type QueueEventsOptions } from '../events/queue-events.js';
import type { RedisEventReader } from './events.js';
import type { FlowJob, JobLogs } from '../types.js';
import { checkFlow } from '../validate/flow-input.js';
import { REDIS_QUEUE_OPTIONS, RedisJobQueue, type BatchOutcome, type Completion, type RedisQueueHandle, type RedisQueueOptions } from './queue.js';

/** The most partitions one queue may have. */
export const MAX_PARTITIONS = 64;

const PARTITIONED_OPTIONS: ReadonlySet<string> = new Set([...REDIS_QUEUE_OPTIONS, 'partitions']);

export interface PartitionedQueueOptions extends RedisQueueOptions {
  /**
   * How many partitions: Redis queues named `name#0`, `name#1`, ..., each in
   * its own hash slot. Every client of the queue must use the same number.
   * `capacity` is each partition's.
   */
  partitions: number;
}

/** What `share()` returns: the handles of the partitions, in order, and what they all share (as a WorkerPool reads it). */
export interface PartitionedQueueHandle {
  readonly kind: 'leasehold/partitioned-redis-queue';
  readonly partitions: readonly RedisQueueHandle[];
  readonly policy: SharedPolicy;
  readonly clock: SharedClock;
}

/**
 * A queue spread over `partitions` Redis queues, with RedisJobQueue's methods.
 * Producers spread jobs: each submit goes to the next partition in turn (a
 * submitMany, all or none, to one partition); a job with an idempotent key
 * goes to the partition its key hashes to, so that one partition decides
 * whether the key is taken. A submitMany whose keys hash to different
 * partitions is refused (InvalidArgumentError): it could not be all or none. Claimers visit partitions: a
 * poll tries them in turn, starting after the one it last leased from, and
 * leases from the first with a ready job. Job ids stay `J<n>`, unique over
 * the partitions (partition p numbers its jobs p + 1, p + 1 + partitions, ...),
 * so a job's calls go straight to its partition.
 *
 * Ordering: within a partition, as RedisJobQueue (priority, then runAt, then
 * submission). Across partitions there is none: a poll may lease a job of
 * lower priority, or submitted later, from one partition while a better job
 * waits in another. Every other rule (leases, tokens, attempts, retries, dead
 * letters, at-most-once calls) holds per job as on one queue. stats() adds up
 * the partitions' counts, read one after another (not one snapshot).
 */
export class PartitionedRedisQueue {
  readonly #parts: readonly RedisJobQueue[];
  #nextSubmit: number;
  #nextPoll: number;
  #closed = false;
  /** The event subscriptions open on this client: closed with it. */
  readonly #subscriptions = new Set<QueueEvents>();

  private constructor(parts: readonly RedisJobQueue[]) {
    this.#parts = parts;
    // Many producers and claimers should not all start at partition 0.
    this.#nextSubmit = Math.floor(Math.random() * parts.length);
    this.#nextPoll = Math.floor(Math.random() * parts.length);
  }

  static async connect(options: PartitionedQueueOptions): Promise<PartitionedRedisQueue> {
    const { partitions, name, ...rest } = readOptions<PartitionedQueueOptions>('options', options, PARTITIONED_OPTIONS);
    checkIntegerIn('partitions', partitions, 1, MAX_PARTITIONS);
    if (typeof name !== 'string') throw new InvalidArgumentError(`Expected \`name\` to be a non-blank string, got ${describe(name)}`);
    // Traced under the queue's own name, not a partition's.
    const tracing = filledTracing(rest.tracing, name);
    // Each partition's connect checks the rest of the options, as the queue's own.
    const partitionOptions = (index: number) => ({ ...rest, name: `${name}#${index}`, tracing }) as RedisQueueOptions;
    return PartitionedRedisQueue.#open((index) => RedisJobQueue.connect(partitionOptions(index), { index, of: partitions }), partitions);
  }

  /** Connects, in this thread or process, to the queue a `share()` handle names. */
  static attach(handle: PartitionedQueueHandle): Promise<PartitionedRedisQueue> {
    if (handle === null || typeof handle !== 'object' || handle.kind !== 'leasehold/partitioned-redis-queue' || !Array.isArray(handle.partitions)) {
      return Promise.reject(new InvalidArgumentError(`Expected a handle from PartitionedRedisQueue#share(), got ${describe(handle)}`));
    }
    return PartitionedRedisQueue.#open((index) => RedisJobQueue.attach(handle.partitions[index]!), handle.partitions.length);
  }

  /** Opens every partition, or none: if one fails, the others are closed again. */
  static async #open(open: (index: number) => Promise<RedisJobQueue>, partitions: number): Promise<PartitionedRedisQueue> {
    const opened = await Promise.allSettled(Array.from({ length: partitions }, (_, index) => open(index)));
    const parts = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const failed = opened.find((result) => result.status === 'rejected');
    if (failed !== undefined) {
      await Promise.all(parts.map((part) => part.close()));
      throw (failed as PromiseRejectedResult).reason;
    }
    return new PartitionedRedisQueue(parts);
  }

  get partitions(): number {
    return this.#parts.length;
  }

  share(): PartitionedQueueHandle {
    this.#assertOpen();
    const partitions = this.#parts.map((part) => part.share());
    const { policy, clock } = partitions[0]!;
    return { kind: 'leasehold/partitioned-redis-queue', partitions, policy, clock };
  }

  /** As RedisJobQueue#reserveBytes (a new Uint8Array: nothing to reserve), from the first partition, whose `releaseBytes` takes it back. */
  reserveBytes(byteLength: number): Uint8Array {
    this.#assertOpen();
    return this.#parts[0]!.reserveBytes(byteLength);
  }

  releaseBytes(bytes: Uint8Array): void {
    this.#assertOpen();
    this.#parts[0]!.releaseBytes(bytes);
  }

  submit(type: string, payload?: Payload | null, options?: SubmitOptions): Promise<string>;
  submit(type: string, payload?: Payload | null, priority?: number, runAtMillis?: number): Promise<string>;
  async submit(type: string, payload?: Payload | null, priorityOrOptions?: number | SubmitOptions, runAtMillis?: number): Promise<string> {
    this.#assertOpen();
    // Checked here too, for the key that picks the partition.
    const { key } = checkSubmit(type, payload, priorityOrOptions ?? 0, runAtMillis, Infinity);
    return this.#submitter(key === null ? [] : [key]).submit(type, payload, priorityOrOptions, runAtMillis);
  }

  /**
   * A whole flow to one partition, the next in turn (as submitMany without keys): its parents and children
   * are counted by one partition's scripts, so a parent's readiness is decided where its children end.
   */
  async submitFlow(flow: FlowJob): Promise<string[]> {
    this.#assertOpen();
    // Checked here too, so that a bad flow is refused before a partition's turn is taken.
    checkFlow(flow, Infinity);
    return this.#submitter([]).submitFlow(flow);
  }

  /** A flow's parent's children's results: its partition holds the whole flow. */
  async childResults(parentId: string): Promise<Record<string, unknown>> {
    return this.#partOf(parentId).childResults(parentId);
  }

  /** All or none, so all to one partition: that of its keys (they must agree), else the next in turn. */
  async submitMany(jobs: readonly NewJob[]): Promise<string[]> {
    this.#assertOpen();
    const keys = checkJobs(jobs, Infinity).flatMap((job) => (job.key === null ? [] : [job.key]));
    return this.#submitter(keys).submitMany(jobs);
  }

  async poll(workerId: string, leaseMillis: number): Promise<Lease | undefined> {
    const [lease] = await this.pollMany(workerId, leaseMillis, 1);
    return lease;
  }

  /** Up to `max` leases, taken from the partitions in turn until `max` are leased or every partition was asked once. */
  async pollMany(workerId: string, leaseMillis: number, max: number): Promise<Lease[]> {
    this.#assertOpen();
    checkIntegerIn('max', max, 1, MAX_BATCH);
    const leases: Lease[] = [];
    const start = this.#nextPoll;
    for (let i = 0; i < this.#parts.length && leases.length < max; i++) {
      const index = (start + i) % this.#parts.length;
      const got = await this.#parts[index]!.pollMany(workerId, leaseMillis, max - leases.length);
      leases.push(...got);
      // The next poll starts after the partition that gave the last lease, so claimers go round.
      if (got.length > 0) this.#nextPoll = (index + 1) % this.#parts.length;
    }
    return leases;
  }

  async complete(jobId: string, token: number, result?: unknown): Promise<void> {
    return this.#partOf(jobId).complete(jobId, token, result);
  }

  /** Complete, then lease the next job: from the job's own partition in the same script if it has one ready, else from the others in turn. */
  async completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number, result?: unknown): Promise<Lease | undefined> {
    return (await this.#partOf(jobId).completeAndPoll(jobId, token, workerId, leaseMillis, result)) ?? this.poll(workerId, leaseMillis);
  }

  /** As RedisJobQueue#finished, on the job's partition. */
  async finished(jobId: string, options?: FinishedOptions): Promise<unknown> {
    return this.#partOf(jobId).finished(jobId, options);
  }

  /**
   * As RedisJobQueue#completeManyAndPoll: one script per partition named in
   * `done`, then polls the others for the rest of `max`. Atomic per
   * partition, not across them: if Redis fails part way, the partitions
   * already called have completed their share.
   */
  async completeManyAndPoll(done: readonly Completion[], workerId: string, leaseMillis: number, max: number): Promise<BatchOutcome> {
    this.#assertOpen();
    if (!Array.isArray(done)) throw new InvalidArgumentError(`Expected \`done\` to be an array of { jobId, token }, got ${describe(done)}`);
    checkIntegerIn('max', max, 0, MAX_BATCH);
    // Every id checked before any partition is called: a malformed one changes nothing.
    for (const completion of done as readonly (Completion | null)[]) {
      if (completion === null || typeof completion !== 'object') {
        throw new InvalidArgumentError(`Expected each of \`done\` to be { jobId, token }, got ${describe(completion)}`);
      }
      parseJobId(completion.jobId);
    }
    const byPartition = new Map<RedisJobQueue, Completion[]>();
    for (const completion of done) {
      const part = this.#partOf(completion.jobId);
      byPartition.set(part, [...(byPartition.get(part) ?? []), completion]);
    }
    const refused: Array<BatchOutcome['refused'][number]> = [];
    const leases: Lease[] = [];
    for (const [part, completions] of byPartition) {
      const outcome = await part.completeManyAndPoll(completions, workerId, leaseMillis, max - leases.length);
      refused.push(...outcome.refused);
      leases.push(...outcome.leases);
    }
    if (leases.length < max) leases.push(...(await this.pollMany(workerId, leaseMillis, max - leases.length)));
    return { refused, leases };
  }

  async fail(jobId: string, token: number, error?: FailError, options?: FailOptions): Promise<void> {
    return this.#partOf(jobId).fail(jobId, token, error, options);
  }

  async release(jobId: string, token: number, options?: ReleaseOptions): Promise<void> {
    return this.#partOf(jobId).release(jobId, token, options);
  }

  async extend(jobId: string, token: number, leaseMillis: number): Promise<number> {
    return this.#partOf(jobId).extend(jobId, token, leaseMillis);
  }

  async progress(jobId: string, token: number, value: number): Promise<void> {
    return this.#partOf(jobId).progress(jobId, token, value);
  }

  async log(jobId: string, line: string): Promise<void> {
    return this.#partOf(jobId).log(jobId, line);
  }

  async logs(jobId: string): Promise<JobLogs> {
    return this.#partOf(jobId).logs(jobId);
  }

  async view(jobId: string): Promise<JobView> {
    return this.#partOf(jobId).view(jobId);
  }

  async retryDead(jobId: string): Promise<void> {
    return this.#partOf(jobId).retryDead(jobId);
  }

  async cancel(jobId: string): Promise<void> {
    return this.#partOf(jobId).cancel(jobId);
  }

  async remove(jobId: string): Promise<void> {
    return this.#partOf(jobId).remove(jobId);
  }

  async changePriority(jobId: string, priority: number): Promise<void> {
    return this.#partOf(jobId).changePriority(jobId, priority);
  }

  async changeDelay(jobId: string, delayMillis: number): Promise<void> {
    return this.#partOf(jobId).changeDelay(jobId, delayMillis);
  }

  async promote(jobId: string): Promise<void> {
    return this.#partOf(jobId).promote(jobId);
  }

  async updatePayload(jobId: string, payload: Payload | null): Promise<void> {
    return this.#partOf(jobId).updatePayload(jobId, payload);
  }

  /** Every DEAD job of every partition, in submission order within a partition, by job number across them. */
  async deadLetters(): Promise<JobView[]> {
    this.#assertOpen();
    const all = (await Promise.all(this.#parts.map((part) => part.deadLetters()))).flat();
    return all.sort((a, b) => parseJobId(a.id) - parseJobId(b.id));
  }

  /**
   * A page of jobs in submission order over every partition, as
   * JobQueue#jobs: each partition's page from the same cursor, merged by job
   * number (job numbers interleave over the partitions). The partitions are
   * read at once, not as one snapshot. O(partitions × (log n + page)).
   */
  async jobs(query?: JobQuery): Promise<JobPage> {
    this.#assertOpen();
    const { limit } = checkJobQuery(query);
    return mergePages(await Promise.all(this.#parts.map((part) => part.jobs(query))), limit);
  }

  async queueDepth(): Promise<number> {
    return (await this.stats()).pending;
  }

  async dlqDepth(): Promise<number> {
    return (await this.stats()).dead;
  }

  /** The partitions' counts added up. */
  async stats(): Promise<QueueStats> {
    this.#assertOpen();
    const each = await Promise.all(this.#parts.map((part) => part.stats()));
    const sum = (pick: (stats: QueueStats) => number) => each.reduce((total, stats) => total + pick(stats), 0);
    return {
      pending: sum((s) => s.pending), ready: sum((s) => s.ready), delayed: sum((s) => s.delayed), running: sum((s) => s.running),
      succeeded: sum((s) => s.succeeded), dead: sum((s) => s.dead), cancelled: sum((s) => s.cancelled),
      paused: each.every((s) => s.paused),
      // Present once some partition has had a flow.
      ...(each.some((s) => s.waitingChildren !== undefined) ? { waitingChildren: sum((s) => s.waitingChildren ?? 0) } : {}),
    };
  }

  /**
   * Pauses every partition, as RedisJobQueue#pause pauses one: one after the
   * other, so a poll in between may still lease from a partition not paused
   * yet; once this resolves, none leases. If it rejects, some partitions may
   * be paused: call it again (pausing a paused partition changes nothing).
   */
  async pause(): Promise<void> {
    this.#assertOpen();
    for (const part of this.#parts) await part.pause();
  }

  /** Resumes every partition (see `pause`). */
  async resume(): Promise<void> {
    this.#assertOpen();
    for (const part of this.#parts) await part.resume();
  }

  /** Whether every partition is paused. */
  async isPaused(): Promise<boolean> {
    return (await this.stats()).paused;
  }

  /**
   * A rate limit for the whole queue, as RedisJobQueue#setRateLimit sets one,
   * split over the partitions: a limit in one partition's keys cannot be
   * read by another's scripts in a cluster (a different hash slot), so
   * partition p gets floor(max / partitions), one more for the first
   * max % partitions. The windows are the same everywhere (the one clock), so
   * at most `max` leases start in a window over all partitions; but a
   * partition cannot use another's unused share, so `max` must be at least
   * the partition count. Set one partition after the other: if this rejects,
   * set it again.
   */
  async setRateLimit(type: string, limit: RateLimit | null): Promise<void> {
    this.#assertOpen();
    const checked = checkRateLimit(type, limit);
    const count = this.#parts.length;
    if (checked !== null && checked.max < count) {
      throw new InvalidArgumentError(`Expected \`max\` to be at least the ${count} partitions (each gets a share), got ${describe(checked.max)}`);
    }
    for (const [p, part] of this.#parts.entries()) {
      const share = checked === null ? null : { max: Math.floor(checked.max / count) + (p < checked.max % count ? 1 : 0), windowMillis: checked.windowMillis };
      await part.setRateLimit(type, share);
    }
  }

  /** Every job type's rate limit, its partitions' shares added up (a type limited in partition 0). */
  async rateLimits(): Promise<TypeRateLimit[]> {
    this.#assertOpen();
    const each = await Promise.all(this.#parts.map((part) => part.rateLimits()));
    return each[0]!.map(({ type, windowMillis }) => ({
      type,
      max: each.reduce((sum, limits) => sum + (limits.find((limit) => limit.type === type)?.max ?? 0), 0),
      windowMillis,
    }));
  }

  /**
   * A concurrency cap for the whole queue or for one job type (see
   * RedisJobQueue#setConcurrency), split over the partitions as setRateLimit
   * splits a limit. A partition's RUNNING jobs live in its own hash slot,
   * and a poll's script can count only its own partition's; so each partition
   * gets a share of `max`, which its scripts enforce exactly:
   * floor(max / partitions), one more for the first max % partitions. The
   * shares add up to `max`, so the queue never has more than `max` jobs
   * RUNNING however many clients poll. A job waits for a place in its own
   * partition's share: while its partition is at its share, it is not leased
   * even if another partition has room. `max` must be at least the partition
   * count (each share at least 1), else InvalidArgumentError and nothing
   * changes. Set one partition after the other: if this rejects for Redis,
   * some partitions may have their share already; set it again.
   *
   * Why shares and not one count for the whole queue: a count in a slot of
   * its own would need every poll to reserve a place there before its
   * partition's script leases (one more round trip per poll), every move out
   * of RUNNING to give its place back in another call (lost when its client
   * dies, so each place would need a deadline no shorter than the lease it
   * covers, a job's own timeout included), every extend to lengthen its
   * place first, and a cap changed while reservations are in flight to count
   * them. Shares keep each count in the script that makes the move, as on a
   * single queue, at the price of a partition's idle share.
   */
  setConcurrency(max: number | null): Promise<void>;
  setConcurrency(type: string, max: number | null): Promise<void>;
  async setConcurrency(...args: unknown[]): Promise<void> {
    this.#assertOpen();
    const { type, max } = checkConcurrency(args);
    const count = this.#parts.length;
    if (max !== null && max < count) {
      throw new InvalidArgumentError(`Expected \`max\` to be at least the ${count} partitions (each gets a share), got ${describe(max)}`);
    }
    for (const [p, part] of this.#parts.entries()) {
      const share = max === null ? null : Math.floor(max / count) + (p < max % count ? 1 : 0);
      if (type === undefined) await part.setConcurrency(share);
      else await part.setConcurrency(type, share);
    }
  }

  /** The concurrency caps, each the partitions' shares added up (the types capped in partition 0). */
  async concurrencyCaps(): Promise<ConcurrencyCaps> {
    this.#assertOpen();
    const each = await Promise.all(this.#parts.map((part) => part.concurrencyCaps()));
    const queue = each[0]!.queue === null ? null : each.reduce((sum, caps) => sum + (caps.queue ?? 0), 0);
    const types = each[0]!.types.map(({ type }) => ({
      type,
      max: each.reduce((sum, caps) => sum + (caps.types.find((cap) => cap.type === type)?.max ?? 0), 0),
    }));
    return { queue, types: types.sort(byType) };
  }

  /**
   * A group's concurrency cap (see RedisJobQueue#setGroupConcurrency), split
   * in shares over the partitions as setConcurrency splits a type's: each
   * partition's scripts hold its share exactly, the shares add up to `max`,
   * and `max` must be at least the partition count (else
   * InvalidArgumentError and nothing changes). A group's jobs spread over
   * the partitions as any others do; each partition takes group turns among
   * its own jobs. Set one partition after the other: if this rejects for
   * Redis, set it again.
   */
  async setGroupConcurrency(group: string, max: number | null): Promise<void>;
  async setGroupConcurrency(...args: unknown[]): Promise<void> {
    this.#assertOpen();
    const { group, max } = checkGroupConcurrency(args);
    const count = this.#parts.length;
    if (max !== null && max < count) {
      throw new InvalidArgumentError(`Expected \`max\` to be at least the ${count} partitions (each gets a share), got ${describe(max)}`);
    }
    for (const [p, part] of this.#parts.entries()) {
      await part.setGroupConcurrency(group, max === null ? null : Math.floor(max / count) + (p < max % count ? 1 : 0));
    }
  }

  /** The groups' concurrency caps, each the partitions' shares added up (the groups capped in partition 0), by group. */
  async groupConcurrencyCaps(): Promise<GroupConcurrencyCap[]> {
    this.#assertOpen();
    const each = await Promise.all(this.#parts.map((part) => part.groupConcurrencyCaps()));
    return each[0]!.map(({ group }) => ({
      group,
      max: each.reduce((sum, caps) => sum + (caps.find((cap) => cap.group === group)?.max ?? 0), 0),
    }));
  }

  /**
   * Gives the jobs of `type` a RetryPolicy of their own in every partition
   * (see RedisJobQueue#setRetryPolicy), one partition after the other: if
   * this rejects, set it again.
   */
  async setRetryPolicy(type: string, policy: RetryPolicy | null): Promise<void> {
    this.#assertOpen();
    const checked = checkRetryPolicy(type, policy);
    for (const part of this.#parts) await part.setRetryPolicy(type, checked);
  }

  /** Every job type's own retry policy, as partition 0 holds them. */
  async retryPolicies(): Promise<TypeRetryPolicy[]> {
    this.#assertOpen();
    return this.#parts[0]!.retryPolicies();
  }

  /** Adds or replaces a repeatable job (see JobQueue#schedule). Schedules live in partition 0. */
  async schedule(name: string, options: ScheduleOptions): Promise<ScheduleView> {
    return this.#scheduler().schedule(name, options);
  }

  async unschedule(name: string): Promise<boolean> {
    return this.#scheduler().unschedule(name);
  }

  async schedules(): Promise<ScheduleView[]> {
    return this.#scheduler().schedules();
  }

  /**
   * Fires the ticks due now (see JobQueue#runSchedules). Each tick's job is
   * submitted on its own, so it goes to the partition its key hashes to,
   * where that key is decided.
   */
  async runSchedules(): Promise<string[]> {
    return this.#scheduler().fireSchedules(async (jobs) => {
      const ids: string[] = [];
      for (const { type, payload, ...options } of jobs) ids.push(await this.submit(type, payload, options));
      return ids;
    });
  }

  /** Runs `runSchedules` now and then every `intervalMillis` until `stop()` or close (see JobQueue#startScheduler). */
  startScheduler(options?: SchedulerOptions): Scheduler {
    this.#assertOpen();
    return startScheduler(() => this.runSchedules(), checkSchedulerOptions(options));
  }

  /** The partition that keeps the schedules. */
  #scheduler(): RedisJobQueue {
    this.#assertOpen();
    return this.#parts[0]!;
  }

  /** As RedisJobQueue#watchCancels, for the cancels of every partition. */
  async watchCancels(heard: (jobId?: string) => void): Promise<() => void> {
    this.#assertOpen();
    const stops = await Promise.all(this.#parts.map((part) => part.watchCancels(heard)));
    return () => {
      for (const stop of stops) stop();
    };
  }

  /** As RedisJobQueue#waitForWork, for new work in any partition. */
  async waitForWork(timeoutMillis: number): Promise<boolean> {
    this.#assertOpen();
    return Promise.race(this.#parts.map((part) => part.waitForWork(timeoutMillis)));
  }

  /**
   * As RedisJobQueue#events, for the moves of every partition: one stream per partition, each
   * read on a connection of its own (a partition's stream lives in its hash slot, on its master), so
   * the order is each job's, and each partition's, not one across partitions. `position` holds one
   * position per partition; a `missed` event names its partition.
   */
  async events(options?: QueueEventsOptions): Promise<QueueEvents> {
    this.#assertOpen();
    const { after, maxLen } = checkEventsOptions(options, this.#parts.length);
    const subscription: QueueEvents = new QueueEvents(() => this.#subscriptions.delete(subscription));
    const opened = await Promise.allSettled(this.#parts.map((part, i) => part.openEventReader(subscription.sink, maxLen, after?.[i])));
    const readers = opened.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const failure = opened.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (failure !== undefined) {
      // All or none: the readers that opened close again.
      await Promise.all(readers.map((reader: RedisEventReader) => reader.close()));
      throw failure.reason;
    }
    subscription.feedFrom(readers);
    this.#subscriptions.add(subscription);
    return subscription;
  }

  /** As RedisJobQueue#disableEvents, for every partition. */
  async disableEvents(): Promise<void> {
    this.#assertOpen();
    await Promise.all(this.#parts.map((part) => part.disableEvents()));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#subscriptions].map((subscription) => subscription.close()));
    await Promise.all(this.#parts.map((part) => part.close()));
  }

  /** The partition that holds `jobId`; an id that is no job's reaches partition 0, which refuses it as RedisJobQueue does. */
  #partOf(jobId: unknown): RedisJobQueue {
    this.#assertOpen();
    let n: number;
    try {
      n = parseJobId(jobId);
    } catch {
      return this.#parts[0]!;
    }
    return this.#parts[(n - 1) % this.#parts.length] ?? this.#parts[0]!;
  }

  /** The partition for jobs with these idempotent keys: the one they hash to, or with none the next in turn. */
  #submitter(keys: readonly string[]): RedisJobQueue {
    this.#assertOpen();
    const parts = this.#parts;
    if (keys.length > 0) {
      const indexes = new Set(keys.map((key) => (keyHash(key) >>> 0) % parts.length));
      if (indexes.size > 1) {
        throw new InvalidArgumentError(
          `Expected the keys of one submitMany to share a partition (each key's partition decides whether it is taken), got keys of ${indexes.size} partitions: submit them in batches per partition`,
        );
      }
      return parts[[...indexes][0]!]!;
    }
    const part = parts[this.#nextSubmit]!;
    this.#nextSubmit = (this.#nextSubmit + 1) % parts.length;
    return part;
  }

  #assertOpen(): void {
    if (this.#closed) throw new IllegalStateError('This queue was closed');
  }
}

/**
 * One page out of the partitions' pages, each read with the same query: a
 * partition's page covers every job of its own up to its `next` (all of them
 * when null), so the merged page lists only jobs up to the lowest of those,
 * and goes on from there.
 */
function mergePages(pages: readonly JobPage[], limit: number): JobPage {
  const covered = Math.min(...pages.map((page) => (page.next === null ? Infinity : parseCursor(page.next))));
  const listable = pages
    .flatMap((page) => page.jobs)
    .map((job) => ({ job, n: parseJobId(job.id) }))
    .filter(({ n }) => n <= covered)
    .sort((a, b) => a.n - b.n);
  const jobs = listable.slice(0, limit).map(({ job }) => job);
  if (listable.length > limit) return { jobs, next: cursorAfter(listable[limit - 1]!.n) };
  return { jobs, next: covered === Infinity ? null : cursorAfter(covered) };
}
