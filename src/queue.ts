import { threadId as ownThreadId } from 'node:worker_threads';
import { clockFromShare, shareClock, type TimeSource } from './clock.js';
import { InvalidArgumentError, QueueFullError, describe } from './errors.js';
import { JOB_QUEUE_OPTIONS, fillOptions, given, readCallers, readOptions, type JobQueueOptions } from './options.js';
import { policyFromShare, sharePolicy, type RetryPolicy } from './policy.js';
import { Journal } from './journal/journal.js';
import { attemptLimit, BUFFER_NAMES, bufferBytes, type BufferName, countedChunks, initialBytes, payloadByteLength, type LoggedJob, mayRetry, type QueueBuffers, QueueMemory, SharedFinishWaits, watchCancels } from './shm/core.js';
import { JobStatus, type Payload, type JobLogs, type JobPage, type JobQuery, type JobView, type Lease, type QueueStats, type RateLimit, type TypeRateLimit, type TypeRetryPolicy, type ConcurrencyCaps as ConcurrencyCapsList, type GroupConcurrencyCap, type FlowJob } from './types.js';
import { checkTimeSource } from './validate/clock.js';
import { checkPolicy } from './validate/construction.js';
import { parseJobId } from './validate/job-id.js';
import type { NewJob, SubmitOptions } from './validate/job-input.js';
import { checkExitedThread } from './validate/lease.js';
import { checkFailure, type FailError, type FailOptions } from './validate/outcome.js';
import { checkSchedulerOptions } from './validate/schedule.js';
import { checkTimeout, type FinishedOptions } from './validate/waits.js';
import { untilFinished } from './finished.js';
import { QueueContext, type JournalLink } from './queue/context.js';
import { FlowSide } from './queue/flows.js';
import { ProducerSide } from './queue/producer-side.js';
import { Reads } from './queue/reads.js';
import { LogStore } from './queue/job-logs.js';
import { jobIdOf } from './job-id.js';
import { checkLogLine } from './validate/logs.js';
import { WorkerSide } from './queue/worker-side.js';
import { Pausing } from './queue/pausing.js';
import { RateLimiting } from './queue/rate-limiting.js';
import { RetryPolicies } from './queue/retry-policies.js';
import { ConcurrencyCaps } from './queue/concurrency-caps.js';
import { checkConcurrency, checkGroupConcurrency } from './validate/concurrency.js';
import { Scheduling } from './queue/scheduling.js';
import { PendingEdits } from './queue/pending-edits.js';
import { RingReader } from './queue/events.js';
import { QueueEvents, checkEventsOptions, type QueueEventsOptions } from './events/queue-events.js';
import { checkReleaseOptions, type ReleaseOptions } from './validate/pending-edits.js';
import type { ScheduleOptions, ScheduleView } from './schedule/spec.js';
import { startScheduler, type Scheduler, type SchedulerOptions } from './schedule/timer.js';
import type { FilledOptions } from './options.js';
import type { SharedClock } from './clock.js';
import type { SharedPolicy } from './policy.js';
import type { Synchronous } from './journal/journal.js';

export type { FailOptions, FinishedOptions, NewJob, ReleaseOptions, SubmitOptions };

/**
 * What `share()` returns: plain data and SharedArrayBuffers, so it survives
 * `postMessage` / `workerData`. `JobQueue.attach(handle)` in any thread opens
 * the same queue.
 */
export interface SharedQueueHandle {
  readonly kind: 'leasehold/shared-queue';
  readonly buffers: QueueBuffers;
  readonly options: FilledOptions;
  readonly policy: SharedPolicy;
  /** The ManualClock's word, or 'system' for systemClock, or null for a clock that cannot cross threads. */
  readonly clock: SharedClock;
  /** The journal every thread writes its moves to, or null for a queue in memory only. */
  readonly journal: { path: string; synchronous: Synchronous } | null;
}

export interface JournalOptions extends JobQueueOptions {
  /**
   * SQLite's `synchronous`: 'NORMAL' survives a crash of the process, 'FULL' also a loss of power (slower).
   * @default 'NORMAL'
   */
  synchronous?: Synchronous;
}

/** The keys of JournalOptions: `JobQueue.open` refuses any other. */
const JOURNAL_OPTIONS: ReadonlySet<string> = new Set([...JOB_QUEUE_OPTIONS, 'synchronous']);

/** The lastError of a job that was RUNNING when its process stopped. */
export const LEASE_LOST = 'lease lost: the process stopped while the job ran';

/**
 * A retrying job queue whose state lives in shared memory.
 *
 * Concurrency contract: any number of threads may attach to one queue and
 * call any method at once. Worker calls of an in-memory queue (`poll`,
 * `complete`, `extend`, `completeAndPoll`) take no queue-wide lock in the
 * common case: a job is leased by a CAS of its slot's lease word that threads
 * really race on, so it is never leased to two workers at once, and a
 * zombie's complete (an old token) is refused. Producer calls and
 * maintenance (submits, fail, cancel, expiry, eviction...) run under the
 * maintenance lock; so does every call of a journaled queue. A thread killed
 * mid-call costs the others at most `lockTimeoutMillis` of waiting, after
 * which whatever it left half-done is finished from its intent: no job is
 * lost or leased twice. See docs/concurrency.md for what overlapping calls
 * may see.
 *
 * Every call first brings the queue up to the clock's `now`: leases that
 * expired count as failed attempts at their leaseUntil, delayed jobs whose
 * time has come become ready.
 */
export class JobQueue {
  readonly #ctx: QueueContext;
  readonly #producer: ProducerSide;
  readonly #flows: FlowSide;
  readonly #worker: WorkerSide;
  readonly #reads: Reads;
  readonly #pausing: Pausing;
  readonly #rateLimiting: RateLimiting;
  readonly #retryPolicies: RetryPolicies;
  readonly #concurrency: ConcurrencyCaps;
  /** The event subscriptions open on this instance: closed with it. */
  readonly #subscriptions = new Set<QueueEvents>();
  readonly #scheduling: Scheduling;
  readonly #edits: PendingEdits;
  /** This instance's `finished` waits. */
  readonly #finishWaits: SharedFinishWaits;
  /** The logs written through this instance (see job-logs.ts). */
  readonly #logs: LogStore;

  constructor(time: TimeSource, policy: RetryPolicy, options?: JobQueueOptions);
  /** @internal Opens existing buffers (see `attach`), or a journal (see `open`). */
  constructor(time: TimeSource, policy: RetryPolicy, options: JobQueueOptions | undefined, buffers: QueueBuffers | undefined, journal?: JournalLink);
  constructor(time: TimeSource, policy: RetryPolicy, options?: JobQueueOptions, buffers?: QueueBuffers, journal?: JournalLink) {
    checkTimeSource(time);
    checkPolicy(policy);
    const filled = fillOptions(options);
    const memory = new QueueMemory(buffers ?? QueueMemory.create(filled.capacity, filled.arenaBytes, journal !== undefined), filled.lockTimeoutMillis);
    // Memory made here, for this instance alone, until `share()` hands it out.
    memory.exclusive = buffers === undefined && journal === undefined;
    this.#ctx = new QueueContext(time, policy, filled, memory, journal);
    this.#producer = new ProducerSide(this.#ctx);
    this.#flows = new FlowSide(this.#ctx);
    this.#worker = new WorkerSide(this.#ctx);
    this.#reads = new Reads(this.#ctx);
    this.#logs = new LogStore(filled, filled.capacity);
    this.#pausing = new Pausing(this.#ctx);
    this.#rateLimiting = new RateLimiting(this.#ctx);
    this.#retryPolicies = new RetryPolicies(this.#ctx);
    this.#concurrency = new ConcurrencyCaps(this.#ctx);
    this.#scheduling = new Scheduling(this.#ctx, (jobs) => this.#producer.submitMany(jobs));
    this.#finishWaits = new SharedFinishWaits(memory, time);
    this.#edits = new PendingEdits(this.#ctx);
  }

  /**
   * Opens the SQLite journal at `path` (creating it if there is none) and
   * returns its queue, with every job it holds: SUCCEEDED, DEAD and CANCELLED
   * as they were; a job RUNNING when the last owner stopped has lost that
   * attempt (lastError LEASE_LOST): PENDING after its backoff while attempts
   * remain, else DEAD. (A lease reaches the journal with the next commit, or
   * at once with `flush()`; one that never did comes back PENDING as it was.)
   *
   * From then on a call returns only once its change is committed (`submit`,
   * `submitMany`, `complete`, `fail`, `release`, `cancel`, `retryDead`); a
   * lease, an extended lease, an expiry and an eviction ride along with the
   * next commit, within milliseconds. Commits are grouped: one thread
   * at a time writes every thread's changes in one transaction, outside the
   * queue lock, so a burst from many threads costs one commit, not one each.
   * A job can be seen (`view`, `stats`) a moment before its submit has
   * committed, but no thread can lease, cancel or retry it before: a crash in
   * that moment forgets it, and its submit never returned.
   *
   * A commit that fails (disk full, read-only, I/O error) throws a
   * JournalWriteError subclass from every call that was waiting for it, and
   * each of those calls is undone: the queue and the journal are as if it
   * never ran. Once the disk works again, so does the queue.
   *
   * One process owns a journal at a time: another gets JournalBusyError; a
   * file that is not a journal gets JournalCorruptError and is left untouched.
   */
  static open(path: string, time: TimeSource, policy: RetryPolicy, options: JournalOptions = {}): JobQueue {
    if (typeof path !== 'string' || path.trim() === '') {
      throw new InvalidArgumentError(`Expected \`path\` to be a file path, got ${describe(path)}`);
    }
    const asked = readOptions<JournalOptions>('options', options, JOURNAL_OPTIONS);
    const filled = fillOptions(asked, JOURNAL_OPTIONS);
    const synchronous = given(asked.synchronous, 'NORMAL');
    if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
      throw new InvalidArgumentError(`Expected \`synchronous\` to be 'NORMAL' or 'FULL', got ${describe(synchronous)}`);
    }
    const journal = Journal.open(path, { synchronous });
    const link: JournalLink = { path, synchronous, journal, owner: false };
    try {
      const queue = new JobQueue(time, policy, filled, undefined, link);
      queue.#restore();
      return queue;
    } catch (error) {
      if (link.owner) journal.release();
      closeQuietly(journal);
      throw error;
    }
  }

  /**
   * Loads the journal's jobs into this new queue: checks first that they fit
   * (a refusal writes nothing), then claims the journal, then journals what
   * opening changes (requeued RUNNING jobs, finished jobs evicted for room).
   */
  #restore(): void {
    const link = this.#ctx.journal!;
    const journal = link.journal;
    const jobs = journal.rows();
    // Read before the claim too: damaged sequences refuse the journal having written nothing. Opening changes neither.
    const sequences = journal.sequences();
    const { kept, dropped } = this.#fitFinished(jobs);
    this.#ctx.locked((core) => {
      const chunks = kept.reduce(
        (sum, job) =>
          sum +
          core.chunksForJob(job.type, Buffer.byteLength(job.type), payloadByteLength(job.payload), job.key === null ? 0 : Buffer.byteLength(job.key), job.headers) +
          countedChunks(job.result),
        0,
      );
      if (core.roomFor(kept.length, chunks) < 0) {
        throw new QueueFullError(
          `The journal ${link.path} holds ${kept.length} jobs that do not fit a queue of capacity ${this.#ctx.options.capacity} and ${this.#ctx.options.arenaBytes} arena bytes: raise \`capacity\` or \`arenaBytes\``,
        );
      }
    });
    journal.claim(link.path);
    link.owner = true;
    const now = this.#ctx.now();
    const lost = kept.filter((job) => job.status === JobStatus.RUNNING);
    const policy = this.#ctx.policy;
    const typePolicies = new Map(journal.retryPolicies().map(({ type, policy }) => [type, policy]));
    for (const job of lost) {
      // The attempt died with its process and counts as failed, so a job that kills its process cannot loop forever.
      const retry = mayRetry(job.attempts, attemptLimit(job.maxAttempts, policy.maxAttempts));
      const runAt = retry ? now + (typePolicies.get(job.type) ?? policy).backoffAfter(job.attempts) : job.runAt;
      // A job dead now finished now (a key it has is held keyTtl from here); one to retry has not finished.
      const finishedAt = retry ? null : now;
      // leaseUntil 0: a job dead now died now, for the retain option's DEAD limits too (see Placement#restoreJob).
      Object.assign(job, { status: retry ? JobStatus.PENDING : JobStatus.DEAD, runAt, lastError: LEASE_LOST, leaseUntil: 0, moves: job.moves + 1, finishedAt });
    }
    journal.write({ inserts: [], updates: lost, evictions: dropped.map((job) => job.num) });
    this.#ctx.locked((core, at) => core.restore(kept, sequences, at));
    if (journal.paused()) this.#pausing.set(true);
    for (const { type, max, windowMillis } of journal.rateLimits()) this.#rateLimiting.set(type, { max, windowMillis });
    for (const [type, typePolicy] of typePolicies) this.#retryPolicies.set(type, typePolicy);
    const caps = journal.concurrencyCaps();
    if (caps.queue !== null) this.#concurrency.set({ type: undefined, max: caps.queue });
    for (const { type, max } of caps.types) this.#concurrency.set({ type, max });
    for (const { group, max } of journal.groupConcurrencyCaps()) this.#concurrency.setGroup({ group, max });
  }

  /** Finished jobs beyond capacity are evicted, as they would have been: oldest finished first. */
  #fitFinished(jobs: LoggedJob[]): { kept: LoggedJob[]; dropped: LoggedJob[] } {
    const excess = jobs.length - this.#ctx.options.capacity;
    if (excess <= 0) return { kept: jobs, dropped: [] };
    const dropped = jobs
      .filter((job) => job.status === JobStatus.SUCCEEDED || job.status === JobStatus.CANCELLED)
      .sort((a, b) => a.finishSeq - b.finishSeq)
      .slice(0, excess);
    const gone = new Set(dropped);
    return { kept: jobs.filter((job) => !gone.has(job)), dropped };
  }


  /** A handle to post to other threads; `JobQueue.attach(handle)` there opens this same queue. */
  share(): SharedQueueHandle {
    this.#ctx.assertOpen();
    // From now on other threads may attach: every move takes the shared protocol (no call is in flight here).
    this.#ctx.memory.exclusive = false;
    return {
      kind: 'leasehold/shared-queue',
      buffers: this.#ctx.memory.buffers,
      options: this.#ctx.options,
      policy: sharePolicy(this.#ctx.policy),
      clock: shareClock(this.#ctx.time),
      journal: this.#ctx.journal === undefined ? null : { path: this.#ctx.journal.path, synchronous: this.#ctx.journal.synchronous },
    };
  }

  /**
   * Tells the queue that the worker thread `threadId` has exited (its
   * Worker's 'exit' event has fired): the rows its instances held (one per
   * attach: where a thread's lock-free calls keep their state) are free for
   * new attaches. A thread killed or crashed cannot give them back itself,
   * and with all 127 taken every new instance runs each call under the
   * queue's lock. Returns how many rows were freed. If the thread died
   * inside a lock-free call, this finishes the move it left half-done
   * first (a rebuild of the queue's indexes, as when a dead thread is found
   * after `lockTimeoutMillis`, but at once). A WorkerPool does this for its
   * own threads.
   *
   * Only for a thread that is gone: a live one whose row is freed takes a new
   * row at its next call, but a call it has in flight meanwhile may race the
   * thread that took the row.
   */
  threadExited(threadId: number): number {
    const ctx = this.#ctx;
    ctx.assertOpen();
    checkExitedThread(threadId, ownThreadId);
    return ctx.reclaimRowsOf(threadId);
  }

  /** Opens, in this thread, the queue a `share()` handle points at. Without `time`, the handle's clock. */
  static attach(handle: SharedQueueHandle, time?: TimeSource): JobQueue {
    // Read once, whole: a handle whose properties throw as they are read is refused like any other non-handle.
    const { options, buffers, clock, policy, link } = readCallers('handle', () => readHandle(handle, time));
    if (link === undefined) return new JobQueue(clock, policy, options, buffers);
    // This thread writes its own moves through its own connection; the ownership stays with the opener.
    const journal = Journal.open(link.path, { synchronous: link.synchronous });
    return new JobQueue(clock, policy, options, buffers, { path: link.path, synchronous: link.synchronous, journal, owner: false });
  }

  /**
   * Queues a new PENDING job and returns its id, `J1`, `J2`, ... With a journal, only once it is committed there.
   * The options form (`{ priority, runAt, delayMillis, maxAttempts }`) or the positional one (`priority, runAtMillis`).
   */
  submit(type: string, payload?: Payload | null, options?: SubmitOptions): string;
  submit(type: string, payload?: Payload | null, priority?: number, runAtMillis?: number): string;
  /** Either form, as a caller that forwards its own arguments has them. */
  submit(type: string, payload?: Payload | null, priorityOrOptions?: number | SubmitOptions, runAtMillis?: number): string;
  submit(type: string, payload?: Payload | null, priorityOrOptions: number | SubmitOptions = 0, runAtMillis?: number): string {
    return this.#producer.submit(type, payload, priorityOrOptions, runAtMillis);
  }

  /**
   * A Uint8Array of `byteLength` bytes to write a binary payload into before
   * submitting it: the queue's shared memory itself, so that `submit` (or
   * `submitMany`, `submitFlow`) of this very array adopts the bytes as the
   * job's, with no copy. Its bytes are not zeroed: write every byte you
   * submit. Any other Uint8Array (a subarray or copy of it, one from another
   * queue instance, one already submitted) is copied as usual.
   *
   * Until its submit the reservation is this instance's: give it back with
   * `releaseBytes` if you do not submit it (closing the instance gives back
   * its own; a thread reported by `threadExited`, or taken for dead, loses
   * its reservations, and their submit throws ReservationLostError). Once
   * submitted, the array is the job's payload: bytes written into it after
   * the submit change the job (and, once the job has left memory, whatever
   * reuses its chunks), so stop writing when you submit.
   *
   * A plain Uint8Array (which the submit copies once) comes back where the
   * shared memory has no room for it now: under 4033 bytes (too short to be
   * worth it), no free stretch that long even after evicting finished jobs,
   * or 256 reservations already held. Throws InvalidArgumentError for a
   * `byteLength` that is not an integer from 0 to `maxPayloadBytes`.
   */
  reserveBytes(byteLength: number): Uint8Array {
    return this.#producer.reserveBytes(byteLength);
  }

  /**
   * Gives back a reservation from `reserveBytes` that will not be submitted:
   * its memory is free for other jobs from now on (do not write into it any
   * more). One already submitted or released, or a plain Uint8Array
   * `reserveBytes` handed out, changes nothing. Throws InvalidArgumentError
   * for anything this instance's `reserveBytes` did not hand out.
   */
  releaseBytes(bytes: Uint8Array): void {
    this.#producer.releaseBytes(bytes);
  }

  /**
   * Queues several jobs at once, all or none: every job is checked first, and
   * room for all is made before any is stored. With a journal they commit in
   * one transaction. Returns their ids in order.
   */
  submitMany(jobs: readonly NewJob[]): string[] {
    return this.#producer.submitMany(jobs);
  }

  /**
   * Submits a parent with its children (each maybe a parent itself), all or
   * none: every job is checked, and room for all is made, before any is
   * stored; with a journal they commit in one transaction. A parent stays
   * PENDING, never leased (its view's `waitingChildren` counts down), until
   * each of its children has ended: SUCCEEDED, or under `onChildFailure:
   * 'ignore'` also DEAD or CANCELLED; under 'fail' (the default) a child DEAD
   * or CANCELLED dead-letters the parent at once, its lastError naming the
   * child. Returns the ids of the whole tree, the root first, each parent
   * before its children (depth first). See docs/api.md, Flows.
   */
  submitFlow(flow: FlowJob): string[] {
    return this.#flows.submitFlow(flow);
  }

  /**
   * What a parent's handler reads: the results of its direct children that
   * SUCCEEDED and are still in memory, by child id (undefined for a child
   * that completed without a result). A child evicted for room (or removed)
   * is missing: size `capacity` or `retain` so that children outlive their
   * parent's run.
   */
  childResults(parentId: string): Record<string, unknown> {
    return this.#flows.childResults(parentId);
  }

  /** Leases the best ready job to `workerId` until now + leaseMillis, or returns undefined if none is ready. */
  poll(workerId: string, leaseMillis: number): Lease | undefined {
    return this.#worker.poll(workerId, leaseMillis);
  }

  /**
   * @internal A WorkerPool thread's poll once `blockForWork` woke it: as `poll`, but a lock-free look that finds
   * nothing ready returns nothing without looking again under the lock (see WorkerSide#pollAfterWake).
   */
  pollAfterWake(workerId: string, leaseMillis: number): Lease | undefined {
    return this.#worker.pollAfterWake(workerId, leaseMillis);
  }

  /**
   * Marks the job SUCCEEDED; `token` must be its current, valid lease.
   * `result`, any JSON-serializable value, is stored with the job (as its
   * JSON text, at most `maxResultBytes`): `view(id).result` and
   * `finished(id)` give it back, parsed. A result JSON.stringify refuses
   * (a cycle, a BigInt, a function) or one too large throws
   * InvalidArgumentError, and the job stays RUNNING, its token valid.
   * A complete with a result takes the queue's lock; one without does not.
   */
  complete(jobId: string, token: number, result?: unknown): void {
    this.#worker.complete(jobId, token, result);
  }

  /**
   * A worker loop's step in one call: `complete(jobId, token, result)`, then
   * `poll(workerId, leaseMillis)`. If the complete is refused, nothing is polled.
   */
  completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number, result?: unknown): Lease | undefined {
    return this.#worker.completeAndPoll(jobId, token, workerId, leaseMillis, result);
  }

  /**
   * Settles when the job finishes, whichever thread finishes it: resolves
   * with its result (undefined if it has none) once SUCCEEDED; rejects
   * JobFailedError (with `status` and `lastError`) once DEAD or CANCELLED,
   * JobNotFoundError for an unknown id or a job evicted before it was seen
   * finished, TimeoutError after `timeoutMillis`, AbortedError when `signal`
   * aborts. A finished job settles at once. The wait sleeps on a shared word
   * (Atomics.waitAsync), so it costs nothing while nothing finishes and does
   * not keep the event loop alive (a timeout's timer does). With a journal,
   * the outcome is committed before it is reported.
   */
  finished(jobId: string, options?: FinishedOptions): Promise<unknown> {
    return untilFinished(jobId, options, () => this.#reads.finishedView(jobId), this.#finishWaits.watch(jobId));
  }

  /**
   * Records a failed attempt: the job retries after its backoff, or is
   * dead-lettered when no attempts are left — or at once with `{ permanent: true }`
   * (a poison job that no retry will fix).
   */
  fail(jobId: string, token: number, error?: FailError, options?: FailOptions): void {
    const { text, permanent } = checkFailure(error, options, this.#ctx.options.maxErrorBytes);
    this.#worker.fail(jobId, parseJobId(jobId), token, text, permanent);
    // A retry with no backoff is ready at once.
    this.#ctx.memory.signal.bump();
  }

  /**
   * Hands a lease back unfinished, for a worker that stops before its job
   * ends (a shutdown, not a failure): the job is PENDING again, ready now,
   * the interrupted attempt not counted and lastError kept; `token` is
   * refused from then on. `token` must be the job's current, valid lease.
   * With `{ delayMillis }` (a snooze), the job is ready that long after the
   * release rather than now, the attempt still not counted.
   */
  release(jobId: string, token: number, options?: ReleaseOptions): void {
    const delayMillis = checkReleaseOptions(options);
    this.#worker.release(jobId, parseJobId(jobId), token, delayMillis);
    this.#ctx.memory.signal.bump();
  }

  /**
   * Returns once every change made so far, by any thread, is in the journal —
   * also those that otherwise ride with the next commit (a lease, an extended
   * lease, an eviction). A worker calls it after `poll` and before running
   * the job, so that an attempt its process dies in is counted after a
   * reopen. Without a journal, returns at once.
   */
  flush(): void {
    this.#ctx.flush();
  }

  /** Heartbeat: the lease now lasts until now + leaseMillis. Returns the new leaseUntil. */
  extend(jobId: string, token: number, leaseMillis: number): number {
    return this.#worker.extend(jobId, token, leaseMillis);
  }

  /**
   * Reports the progress of a RUNNING job: `value`, any finite number (the
   * handler's own scale), under the lease `token`; `view(jobId).progress`
   * shows it until the job's next attempt begins. Refused as `extend` is: a
   * token that is not the current, valid lease's → StaleLeaseError. The
   * lease keeps its end (see `extend`).
   */
  progress(jobId: string, token: number, value: number): void {
    this.#worker.progress(jobId, token, value);
  }

  /**
   * Appends `line` to the job's log (a handler's `ctx.log`): cut to
   * `maxLogLineBytes`; past `maxLogLines` the oldest line is dropped and
   * counted. Kept across the job's attempts, until the job is evicted or
   * removed. Kept in this instance's memory only: not in shared memory,
   * not in the journal (a WorkerPool writes through its main thread's
   * queue, which then has every line of its handlers).
   */
  log(jobId: string, line: string): void {
    checkLogLine(line);
    const jobNum = parseJobId(jobId);
    // The job must be held: unknown, evicted or removed → JobNotFoundError.
    this.#reads.assertHolds(jobId);
    this.#logs.append(jobNum, line, (num) => this.#holds(num));
  }

  /** The job's log: its lines kept, oldest first, and how many older ones were dropped. */
  logs(jobId: string): JobLogs {
    const jobNum = parseJobId(jobId);
    this.#reads.assertHolds(jobId);
    return this.#logs.read(jobNum);
  }

  /** Whether job number `num` is still held (for the log store's sweep). */
  #holds(num: number): boolean {
    try {
      this.#reads.assertHolds(jobIdOf(num));
      return true;
    } catch {
      return false;
    }
  }

  view(jobId: string): JobView {
    return this.#reads.view(jobId);
  }

  /** Every DEAD job, in submission order. */
  deadLetters(): JobView[] {
    return this.#reads.deadLetters();
  }

  /**
   * A page of jobs in ascending submission order (job number): of one status
   * and type if asked, at most `limit` (1 to 1000, default 100); `next` goes
   * on after it (null: the last page). A job that moves between pages is
   * listed where the call that reaches it finds it: a walk of one status
   * never lists a job twice, and lists every job that stayed in it
   * throughout. O(log n + page) for a status, however rare among others
   * (see docs/api.md, "Listing jobs", for a type's cost).
   */
  jobs(query?: JobQuery): JobPage {
    return this.#reads.jobs(query);
  }

  /** Puts a DEAD job back to PENDING, ready now, with attempts reset to 0 (lastError kept). */
  retryDead(jobId: string): void {
    this.#producer.retryDead(jobId);
  }

  /**
   * For worker loops: after a `poll` that returned nothing, sleeps until work
   * may have arrived (a submit, a retry, a failed attempt anywhere since that
   * poll began) or `timeoutMillis` pass, without blocking this thread's event
   * loop. Resolves true if woken by new work. A poll that passed over jobs
   * for their type's rate limit sleeps only until the first of those
   * windows opens (by the queue's clock, taken as real milliseconds), and
   * then resolves true. Other jobs that become ready by the clock alone (a
   * delayed runAt, a backoff) wake no one: cap the timeout.
   */
  waitForWork(timeoutMillis: number): Promise<boolean> {
    let opensIn: number;
    try {
      this.#ctx.assertOpen();
      checkTimeout(timeoutMillis);
      opensIn = Math.max(0, this.#worker.windowOpensAt - this.#ctx.now());
    } catch (error) {
      return Promise.reject(error);
    }
    const signal = this.#ctx.memory.signal;
    if (opensIn >= timeoutMillis) return signal.wait(this.#worker.signalSeen, timeoutMillis);
    return signal.wait(this.#worker.signalSeen, opensIn).then(() => true);
  }

  /**
   * As `waitForWork`, but blocks the calling thread (Atomics.wait) rather than
   * its event loop's turn: no timer, message or callback of this thread runs
   * until it returns. For a worker thread that has nothing in flight, in
   * short slices between turns of its event loop: it starts a job a
   * submit wakes it for sooner than `waitForWork` would. Returns true if
   * woken by new work (or once a rate-limit window opens).
   */
  blockForWork(timeoutMillis: number): boolean {
    this.#ctx.assertOpen();
    checkTimeout(timeoutMillis);
    const opensIn = Math.max(0, this.#worker.windowOpensAt - this.#ctx.now());
    const signal = this.#ctx.memory.signal;
    if (opensIn >= timeoutMillis) return signal.block(this.#worker.signalSeen, timeoutMillis);
    signal.block(this.#worker.signalSeen, opensIn);
    return true;
  }

  /**
   * Cancels a PENDING or RUNNING job: it becomes CANCELLED, for good. A
   * RUNNING job's lease ends with it: its holder's complete, fail, extend
   * and release are refused with StaleLeaseError, as a zombie's, and its
   * attempt stays counted. Worker loops watching (`watchCancels`, as a
   * WorkerPool's threads do) hear of it once the cancel has returned.
   */
  cancel(jobId: string): void {
    this.#producer.cancel(jobId);
  }

  /** A PENDING job's new priority (an integer; higher runs first). IllegalStateError on any other status, changing nothing. */
  changePriority(jobId: string, priority: number): void {
    this.#edits.changePriority(jobId, priority);
  }

  /** A PENDING job runs `delayMillis` from now (0: ready now). IllegalStateError on any other status, changing nothing. */
  changeDelay(jobId: string, delayMillis: number): void {
    this.#edits.changeDelay(jobId, delayMillis);
  }

  /** A delayed PENDING job ready now (runAt = now); one already ready is left as it is. IllegalStateError on any other status. */
  promote(jobId: string): void {
    this.#edits.promote(jobId);
  }

  /** A PENDING job's new payload (BullMQ's updateData). IllegalStateError on any other status, changing nothing. */
  updatePayload(jobId: string, payload: Payload | null): void {
    this.#edits.updatePayload(jobId, payload);
  }

  /**
   * For worker loops: calls `heard` after a RUNNING job of this queue is
   * cancelled, by any thread, from now until the returned function is
   * called (several cancels close together may be heard once). It names no
   * job: look at the jobs you run (`view`) to find which. Costs one
   * Atomics.waitAsync, armed while the watch lasts; it keeps no event loop alive.
   */
  watchCancels(heard: (jobId?: string) => void): () => void {
    this.#ctx.assertOpen();
    return watchCancels(this.#ctx.memory.lockWords, () => heard());
  }

  /**
   * Removes a job that is not RUNNING (PENDING, SUCCEEDED, DEAD or
   * CANCELLED), with its payload, result and lastError: `view` then throws
   * JobNotFoundError, as for an evicted job, and its idempotent key is free.
   * A RUNNING job is refused (IllegalStateError), an unknown or gone id with
   * JobNotFoundError; a refused call changes nothing. With a journal, the
   * removal is durable when the call returns.
   */
  remove(jobId: string): void {
    this.#producer.remove(jobId);
  }

  /**
   * Pauses the queue, for every thread attached to it (and, with a journal,
   * across a reopen): from now until `resume()`, `poll` and the poll of
   * `completeAndPoll` hand out nothing. Jobs already RUNNING go on: complete,
   * fail, extend and release work, as do submits (the jobs wait). Pausing a
   * paused queue changes nothing.
   */
  pause(): void {
    this.#pausing.set(true);
  }

  /** Ends a pause: polls hand out jobs again, and workers asleep in `waitForWork` wake. */
  resume(): void {
    this.#pausing.set(false);
  }

  /** Whether the queue is paused (by any thread). */
  isPaused(): boolean {
    return this.#pausing.isPaused();
  }

  /**
   * Limits how many leases of jobs of `type` start per window, for every
   * thread attached to the queue (and, with a journal, across a reopen);
   * `null` removes the limit. Windows are fixed, aligned to the queue's clock
   * (see RateLimit): in each, at most `max` polls hand out a job of `type`.
   * A poll that meets such a job once its window is used up passes over it
   * to the next best job of another type; the job waits PENDING, in its
   * place among its type, until the window opens. While any type has a limit,
   * every poll takes the maintenance lock (complete and extend stay
   * lock-free), so the count is exact however many threads poll. The type
   * must be at most 124 UTF-8 bytes here. A new limit counts the leases
   * made from then on; a changed one keeps the current window's count.
   */
  setRateLimit(type: string, limit: RateLimit | null): void {
    this.#rateLimiting.set(type, limit);
  }

  /** Every job type's rate limit. */
  rateLimits(): TypeRateLimit[] {
    return this.#rateLimiting.list();
  }

  /**
   * Gives the jobs of `type` a RetryPolicy of their own, for every thread
   * attached to the queue (and, with a journal, across a reopen); `null`
   * removes it. A job submitted while its type has one takes its
   * `maxAttempts` (unless submit gave the job its own), as its own attempts;
   * each failed attempt of a job of `type` (a fail, an expired lease) waits
   * the type's backoff while it has one, else the queue's. The type must be
   * at most 124 UTF-8 bytes here; `maxAttempts` at most 2^32 - 1.
   */
  setRetryPolicy(type: string, policy: RetryPolicy | null): void {
    this.#retryPolicies.set(type, policy);
  }

  /** Every job type's own retry policy, by type. */
  retryPolicies(): TypeRetryPolicy[] {
    return this.#retryPolicies.list();
  }

  /**
   * Caps how many jobs are RUNNING at once, for every thread attached to the
   * queue (and, with a journal, across a reopen): `setConcurrency(max)` caps
   * the whole queue, `setConcurrency(type, max)` the jobs of `type`; `null`
   * removes the cap. A poll passes over a job whose type's cap is reached to
   * the next best job of another type (the job waits PENDING, in its place),
   * and claims nothing while the queue's cap is reached. Exact however many
   * threads poll: while any cap is set, every poll takes the maintenance
   * lock (complete and extend stay lock-free). A cap lowered below the jobs
   * RUNNING stops none of them: new claims wait until fewer run. `max` is an
   * integer from 1 to 2^31 - 1; the type at most 124 UTF-8 bytes here.
   */
  setConcurrency(max: number | null): void;
  setConcurrency(type: string, max: number | null): void;
  setConcurrency(...args: unknown[]): void {
    this.#concurrency.set(checkConcurrency(args));
  }

  /** The concurrency caps: the whole queue's (null: none) and each job type's, by type. */
  concurrencyCaps(): ConcurrencyCapsList {
    return this.#concurrency.list();
  }

  /**
   * Caps how many jobs of `group` (submit's `group` option) are RUNNING at
   * once, for every thread attached to the queue (and, with a journal,
   * across a reopen); `null` removes the cap. A poll passes over a job whose
   * group's cap is reached to the next job in turn (it waits PENDING, its
   * turn kept). Exact however many threads poll, as `setConcurrency` is.
   * Naming a group here makes the queue take group turns (see `submit`'s
   * `group`). `group` a non-blank string of at most 124 UTF-8 bytes; `max`
   * an integer from 1 to 2^31 - 1. Not on the Redis backends yet.
   */
  setGroupConcurrency(group: string, max: number | null): void;
  setGroupConcurrency(...args: unknown[]): void {
    this.#concurrency.setGroup(checkGroupConcurrency(args));
  }

  /** The groups' concurrency caps, by group name. */
  groupConcurrencyCaps(): GroupConcurrencyCap[] {
    return this.#concurrency.listGroups();
  }

  /**
   * Adds a repeatable job, or replaces the schedule of that name: a job of
   * `type` and `payload` for every tick of a cron expression (`cron`, in
   * `timeZone`) or of a fixed interval (`everyMillis`). Shared by every
   * attached thread; with a journal, kept there across a reopen. A tick's
   * job is made by `runSchedules` (or a `startScheduler`), exactly one per
   * tick however many run at once. Returns the schedule, with its first tick.
   */
  schedule(name: string, options: ScheduleOptions): ScheduleView {
    return this.#scheduling.schedule(name, options);
  }

  /** Removes a schedule (its jobs made so far stay); false if there was none of that name. */
  unschedule(name: string): boolean {
    return this.#scheduling.unschedule(name);
  }

  /** Every schedule, by name, with its next tick. */
  schedules(): ScheduleView[] {
    return this.#scheduling.list();
  }

  /**
   * Fires the ticks that are due now: for each schedule whose next tick has
   * come, submits its jobs (see `missed` for ticks that came while no
   * scheduler ran) and moves the schedule on to its next tick after now.
   * Returns the ids of the jobs made for the schedules this call moved on;
   * another thread that raced it for a tick gets none for that tick.
   */
  runSchedules(): string[] {
    return this.#scheduling.run();
  }

  /**
   * Runs `runSchedules` now and then every `intervalMillis` (default 1000)
   * in this thread until `stop()`, or until the queue is closed. Any number
   * may run at once, in any threads: each tick still makes one job.
   */
  startScheduler(options?: SchedulerOptions): Scheduler {
    this.#ctx.assertOpen();
    return startScheduler(() => this.runSchedules(), checkSchedulerOptions(options));
  }

  /**
   * Subscribes, on this thread, to the queue's moves made by any thread (a WorkerPool's, or plain
   * poll / complete callers'): every move made from the moment this returns reaches its listeners,
   * in order, from the queue's shared ring of the last 1024 events (a subscriber that falls further
   * behind is told how many it missed). Not durable with a journal: the ring is memory. `maxLen` is
   * Redis's and ignored here. See QueueEvents.
   */
  events(options?: QueueEventsOptions): QueueEvents {
    this.#ctx.assertOpen();
    const { after } = checkEventsOptions(options, 1);
    const subscription: QueueEvents = new QueueEvents(() => this.#subscriptions.delete(subscription));
    subscription.feedFrom([new RingReader(this.#ctx.memory.events, subscription.sink, after === undefined ? undefined : Number(after[0]))]);
    this.#subscriptions.add(subscription);
    return subscription;
  }

  /** PENDING jobs, ready or delayed. */
  queueDepth(): number {
    return this.stats().pending;
  }

  /** DEAD jobs. */
  dlqDepth(): number {
    return this.stats().dead;
  }

  stats(): QueueStats {
    return this.#reads.stats();
  }

  /**
   * Closes this thread's view of the queue; other threads' views stay open.
   * With a journal, commits what is still to commit, closes this thread's
   * connection, and the owner's close releases the journal for another
   * process (or another open in this thread). If that last commit fails, the
   * queue is closed and released all the same, and close throws the
   * JournalWriteError: what it could not commit (at most the leases,
   * extensions and evictions of the last milliseconds) is not in the journal.
   */
  close(): void {
    const ctx = this.#ctx;
    if (ctx.closed) return;
    // Each subscription stops at once (its count and its wait are let go synchronously); its promise is its own.
    for (const subscription of this.#subscriptions) void subscription.close();
    ctx.releaseReservations();
    ctx.releaseRow();
    const link = ctx.journal;
    let failure: unknown;
    if (link !== undefined) {
      ctx.stopCommitTimer();
      try {
        // Everything noted so far, by any thread (also one since killed), is committed before the journal is let go.
        ctx.commitNoted();
      } catch (error) {
        failure = error;
      }
      if (link.owner) {
        try {
          // No view attached to this one starts a call from here; a call that ran since the flush above is committed now.
          ctx.releaseJournal();
          ctx.commitNoted();
        } catch (error) {
          failure ??= error;
        }
        link.journal.release();
      }
      const closing = closeQuietly(link.journal);
      failure ??= closing;
    }
    ctx.closed = true;
    // This instance's `finished` waits look again, and are told the queue is closed.
    this.#finishWaits.close();
    if (failure !== undefined) throw failure;
  }
}

/** Closes a connection; returns the error instead of throwing it (the caller has a better one to report first). */
function closeQuietly(journal: Journal): unknown {
  try {
    journal.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

/** What `attach` opens: a share() handle's parts, each checked (a mismatched handle would corrupt memory later). */
function readHandle(handle: SharedQueueHandle, time: TimeSource | undefined) {
  const notAHandle = () => new InvalidArgumentError(`Expected a handle from JobQueue#share(), got ${describe(handle)}`);
  if (handle === null || typeof handle !== 'object' || handle.kind !== 'leasehold/shared-queue' || handle.policy === null || typeof handle.policy !== 'object') {
    throw notAHandle();
  }
  const options = fillOptions(handle.options);
  // Every buffer must be the one the options size: at most that long (a growing one may be shorter, see initialBytes), at least as it started.
  const sizes = bufferBytes(options.capacity, options.arenaBytes);
  const initial = initialBytes(options.capacity, options.arenaBytes, handle.journal !== null && handle.journal !== undefined);
  const buffers = handle.buffers;
  const fits = (buffer: unknown, name: BufferName) =>
    buffer instanceof SharedArrayBuffer && buffer.maxByteLength === sizes[name] && buffer.byteLength >= initial[name];
  if (BUFFER_NAMES.some((name) => !fits(buffers?.[name], name))) throw notAHandle();
  const clock = time ?? clockFromShare(handle.clock);
  const policy = policyFromShare(handle.policy);
  const journal = handle.journal;
  if (journal === null || journal === undefined) return { options, buffers, clock, policy, link: undefined };
  const { path, synchronous } = journal;
  if (typeof path !== 'string' || (synchronous !== 'NORMAL' && synchronous !== 'FULL')) throw notAHandle();
  return { options, buffers, clock, policy, link: { path, synchronous } };
}
