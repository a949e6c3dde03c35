import { clockFromShare, shareClock, type SharedClock, type TimeSource } from './clock.js';
import {
  IllegalStateError, InvalidArgumentError, JournalWriteError, QueueFullError, describe, refusalError,
} from './errors.js';
import { fillOptions, type FilledOptions, type JobQueueOptions } from './options.js';
import { policyFromShare, sharePolicy, type RetryPolicy, type SharedPolicy } from './policy.js';
import { Journal, type Synchronous } from './journal/journal.js';
import { Arena } from './shm/arena.js';
import { AWAITS_COMMIT, LockLost, NAME_OF_STATUS, QueueCore, type JobRecord } from './shm/core.js';
import type { UndoneMove } from './shm/undo-log.js';
import type { LoggedJob } from './shm/movelog.js';
import { BUFFER_NAMES, bufferBytes, type QueueBuffers } from './shm/layout.js';
import { QueueMemory } from './shm/memory.js';
import { JobStatus, type JobView, type Lease, type QueueStats } from './types.js';
import {
  checkFailure, checkJob, checkJobs, checkLeaseMillis, checkNow, checkPolicy, checkTimeSource, checkTimeout, checkWorkerId, parseJobId,
  type CheckedJob, type FailOptions, type NewJob,
} from './validate.js';

export type { FailOptions, NewJob };

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

/** This thread's connection to the queue's journal; the opening thread's also holds the ownership. */
interface JournalLink {
  path: string;
  synchronous: Synchronous;
  journal: Journal;
  owner: boolean;
}

/** Longest a change that no caller waits for stays out of the journal, unless another commit takes it sooner. */
const COMMIT_SOON_MILLIS = 5;
/** Longest a thread sleeps for another thread's commit before it looks again (a leader wakes it sooner). */
const COMMIT_NAP_MILLIS = 1;

/** The lastError of a job that was RUNNING when its process stopped. */
export const LEASE_LOST = 'lease lost: the process stopped while the job ran';

/**
 * A retrying job queue whose state lives in shared memory.
 *
 * Concurrency contract: any number of threads may attach to one queue and
 * call any method at once. Each call runs under the queue lock, a short
 * critical section on shared words; a job is leased by a CAS of its slot's
 * lease word, so it is never leased to two workers at once, and a zombie's
 * complete (an old token) is refused. A thread killed mid-call costs the
 * others at most `lockTimeoutMillis` of waiting, after which the queue is
 * repaired from the slot words: no job is lost or leased twice.
 *
 * Every call first brings the queue up to the clock's `now`: leases that
 * expired count as failed attempts at their leaseUntil, delayed jobs whose
 * time has come become ready.
 */
export class JobQueue {
  readonly #time: TimeSource;
  readonly #policy: RetryPolicy;
  readonly #options: FilledOptions;
  readonly #memory: QueueMemory;
  readonly #core: QueueCore;
  readonly #journal: JournalLink | undefined;
  #closed = false;
  #signalSeen = 0;
  #commitTimer: NodeJS.Timeout | undefined;
  #soonTicket = 0;

  constructor(time: TimeSource, policy: RetryPolicy, options?: JobQueueOptions);
  /** @internal Opens existing buffers (see `attach`), or a journal (see `open`). */
  constructor(time: TimeSource, policy: RetryPolicy, options: JobQueueOptions | undefined, buffers: QueueBuffers | undefined, journal?: JournalLink);
  constructor(time: TimeSource, policy: RetryPolicy, options?: JobQueueOptions, buffers?: QueueBuffers, journal?: JournalLink) {
    checkTimeSource(time);
    checkPolicy(policy);
    this.#time = time;
    this.#policy = policy;
    this.#options = fillOptions(options);
    this.#memory = new QueueMemory(buffers ?? QueueMemory.create(this.#options.capacity, this.#options.arenaBytes), this.#options.lockTimeoutMillis);
    this.#journal = journal;
    this.#core = new QueueCore(this.#memory, policy, journal?.journal);
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
   * `submitMany`, `complete`, `fail`, `cancel`, `retryDead`, and any call that
   * expired a lease); a lease, an extended lease and an eviction ride along
   * with the next commit, within milliseconds. Commits are grouped: one thread
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
    const synchronous = options?.synchronous ?? 'NORMAL';
    if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
      throw new InvalidArgumentError(`Expected \`synchronous\` to be 'NORMAL' or 'FULL', got ${describe(synchronous)}`);
    }
    const filled = fillOptions(options);
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
    const link = this.#journal!;
    const journal = link.journal;
    const jobs = journal.rows();
    const { kept, dropped } = this.#fitFinished(jobs);
    this.#locked((core) => {
      const chunks = kept.reduce((sum, job) => sum + Arena.chunksFor(Buffer.byteLength(job.type) + Buffer.byteLength(job.payload)), 0);
      if (core.roomFor(kept.length, chunks) < 0) {
        throw new QueueFullError(
          `The journal ${link.path} holds ${kept.length} jobs that do not fit a queue of capacity ${this.#options.capacity} and ${this.#options.arenaBytes} arena bytes: raise \`capacity\` or \`arenaBytes\``,
        );
      }
    });
    journal.claim(link.path);
    link.owner = true;
    const now = this.#now();
    const lost = kept.filter((job) => job.status === JobStatus.RUNNING);
    for (const job of lost) {
      // The attempt died with its process and counts as failed, so a job that kills its process cannot loop forever.
      const retry = job.attempts < this.#policy.maxAttempts;
      const runAt = retry ? now + this.#policy.backoffAfter(job.attempts) : job.runAt;
      Object.assign(job, { status: retry ? JobStatus.PENDING : JobStatus.DEAD, runAt, lastError: LEASE_LOST, leaseUntil: 0, moves: job.moves + 1 });
    }
    journal.write({ inserts: [], updates: lost, evictions: dropped.map((job) => job.num) });
    const sequences = journal.sequences();
    this.#locked((core, at) => core.restore(kept, sequences, at));
  }

  /** Finished jobs beyond capacity are evicted, as they would have been: oldest finished first. */
  #fitFinished(jobs: LoggedJob[]): { kept: LoggedJob[]; dropped: LoggedJob[] } {
    const excess = jobs.length - this.#options.capacity;
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
    this.#assertOpen();
    return {
      kind: 'leasehold/shared-queue',
      buffers: this.#memory.buffers,
      options: this.#options,
      policy: sharePolicy(this.#policy),
      clock: shareClock(this.#time),
      journal: this.#journal === undefined ? null : { path: this.#journal.path, synchronous: this.#journal.synchronous },
    };
  }

  /** Opens, in this thread, the queue a `share()` handle points at. Without `time`, the handle's clock. */
  static attach(handle: SharedQueueHandle, time?: TimeSource): JobQueue {
    const notAHandle = () => new InvalidArgumentError(`Expected a handle from JobQueue#share(), got ${describe(handle)}`);
    if (handle === null || typeof handle !== 'object' || handle.kind !== 'leasehold/shared-queue' ||
        handle.policy === null || typeof handle.policy !== 'object') {
      throw notAHandle();
    }
    const options = fillOptions(handle.options);
    // Every buffer must be the one the options size: a mismatched handle would corrupt memory later.
    const sizes = bufferBytes(options.capacity, options.arenaBytes);
    if (BUFFER_NAMES.some((name) => !(handle.buffers?.[name] instanceof SharedArrayBuffer) || handle.buffers[name].byteLength !== sizes[name])) {
      throw notAHandle();
    }
    const clock = time ?? clockFromShare(handle.clock);
    const policy = policyFromShare(handle.policy);
    const link = handle.journal;
    if (link === null || link === undefined) return new JobQueue(clock, policy, options, handle.buffers);
    if (typeof link !== 'object' || typeof link.path !== 'string' || (link.synchronous !== 'NORMAL' && link.synchronous !== 'FULL')) {
      throw notAHandle();
    }
    // This thread writes its own moves through its own connection; the ownership stays with the opener.
    const journal = Journal.open(link.path, { synchronous: link.synchronous });
    return new JobQueue(clock, policy, options, handle.buffers, { path: link.path, synchronous: link.synchronous, journal, owner: false });
  }

  /** Queues a new PENDING job and returns its id, `J1`, `J2`, ... With a journal, only once it is committed there. */
  submit(type: string, payload?: string | null, priority = 0, runAtMillis?: number): string {
    this.#assertOpen();
    const job = checkJob(type, payload, priority, runAtMillis, this.#options.maxPayloadBytes);
    const id = this.#locked((core, now) => this.#submitChecked(core, job, now));
    this.#memory.signal.bump();
    return id;
  }

  /**
   * Queues several jobs at once, all or none: every job is checked first, and
   * room for all is made before any is stored. With a journal they commit in
   * one transaction. Returns their ids in order.
   */
  submitMany(jobs: readonly NewJob[]): string[] {
    this.#assertOpen();
    const checked = checkJobs(jobs, this.#options.maxPayloadBytes);
    const ids = this.#locked((core, now) => {
      const chunks = checked.reduce((sum, job) => sum + Arena.chunksFor(job.typeBytes + job.payloadBytes), 0);
      const refusal = core.roomFor(checked.length, chunks);
      if (refusal < 0) throw refusalError(refusal, '', this.#options.capacity);
      return checked.map((job) => this.#submitChecked(core, job, now));
    });
    this.#memory.signal.bump();
    return ids;
  }

  #submitChecked(core: QueueCore, job: CheckedJob, now: number): string {
    const jobNum = core.submit(job.type, job.typeBytes, job.payload, job.payloadBytes, job.priority, job.runAtMillis ?? now, now);
    if (jobNum < 0) throw refusalError(jobNum, '', this.#options.capacity);
    return `J${jobNum}`;
  }

  /** Leases the best ready job to `workerId` until now + leaseMillis, or returns undefined if none is ready. */
  poll(workerId: string, leaseMillis: number): Lease | undefined {
    this.#checkPoll(workerId, leaseMillis);
    const lease = this.#locked((core, now) => this.#leaseBest(core, workerId, leaseMillis, now));
    if (lease !== undefined || !this.#core.skippedFrozen() || !this.#helpCommit()) return lease;
    return this.#locked((core, now) => this.#leaseBest(core, workerId, leaseMillis, now));
  }

  /**
   * For a poll that found only jobs frozen by commits in flight (see AWAITED
   * in layout.ts): commits everything noted so far, so that a frozen job whose
   * caller died waiting never stays frozen (usually it only joins the commit
   * its caller is making). False if that commit failed: then those jobs are
   * being undone, and the poll has nothing to lease.
   */
  #helpCommit(): boolean {
    try {
      this.#makeDurable(this.#memory.commits.head());
      return true;
    } catch (error) {
      if (error instanceof JournalWriteError) return false;
      throw error;
    }
  }

  /** A poll's checks, before anything changes; then the work signal as the poll starts. */
  #checkPoll(workerId: string, leaseMillis: number): void {
    this.#assertOpen();
    checkWorkerId(workerId);
    checkLeaseMillis(leaseMillis);
    // Read before polling: work that arrives after this point wakes `waitForWork`.
    this.#signalSeen = this.#memory.signal.current();
  }

  #leaseBest(core: QueueCore, workerId: string, leaseMillis: number, now: number): Lease | undefined {
    const slot = core.poll(workerId, leaseMillis, now);
    return slot < 0 ? undefined : core.lease(slot);
  }

  /** Marks the job SUCCEEDED; `token` must be its current, valid lease. */
  complete(jobId: string, token: number): void {
    this.#withJob(jobId, (core, slot) => core.complete(slot, token));
  }

  /**
   * A worker loop's step under one lock: `complete(jobId, token)`, then
   * `poll(workerId, leaseMillis)`. If the complete is refused, nothing is polled.
   */
  completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number): Lease | undefined {
    this.#checkPoll(workerId, leaseMillis);
    const lease = this.#withJob(jobId, (core, slot, now): Lease | number | undefined => {
      const refused = core.complete(slot, token);
      return refused < 0 ? refused : this.#leaseBest(core, workerId, leaseMillis, now);
    }) as Lease | undefined;
    // The complete's commit took the frozen jobs' moves along: they can be leased now.
    return lease === undefined && this.#core.skippedFrozen() ? this.poll(workerId, leaseMillis) : lease;
  }

  /**
   * Records a failed attempt: the job retries after its backoff, or is
   * dead-lettered when no attempts are left — or at once with `{ permanent: true }`
   * (a poison job that no retry will fix).
   */
  fail(jobId: string, token: number, error?: string | null, options?: FailOptions): void {
    const { text, permanent } = checkFailure(error, options, this.#options.maxErrorBytes);
    this.#withJob(jobId, (core, slot, now) => core.fail(slot, token, text, permanent, now));
    // A retry with no backoff is ready at once.
    this.#memory.signal.bump();
  }

  /**
   * Hands a lease back unfinished, for a worker that stops before its job
   * ends (a shutdown, not a failure): the job is PENDING again, ready now,
   * the interrupted attempt not counted and lastError kept; `token` is
   * refused from then on. `token` must be the job's current, valid lease.
   */
  release(jobId: string, token: number): void {
    this.#withJob(jobId, (core, slot, now) => core.release(slot, token, now));
    this.#memory.signal.bump();
  }

  /**
   * Returns once every change made so far, by any thread, is in the journal —
   * also those that otherwise ride with the next commit (a lease, an extended
   * lease, an eviction). A worker calls it after `poll` and before running
   * the job, so that an attempt its process dies in is counted after a
   * reopen. Without a journal, returns at once.
   */
  flush(): void {
    this.#assertOpen();
    if (this.#journal !== undefined) this.#makeDurable(this.#memory.commits.head());
  }

  /** Heartbeat: the lease now lasts until now + leaseMillis. Returns the new leaseUntil. */
  extend(jobId: string, token: number, leaseMillis: number): number {
    checkLeaseMillis(leaseMillis);
    return this.#withJob(jobId, (core, slot, now) => core.extend(slot, token, leaseMillis, now));
  }

  view(jobId: string): JobView {
    return this.#withJob(jobId, (core, slot) => toView(core.read(slot)));
  }

  /** Every DEAD job, in submission order. */
  deadLetters(): JobView[] {
    return this.#locked((core) => core.deadSlots().map((slot) => toView(core.read(slot))));
  }

  /** Puts a DEAD job back to PENDING, ready now, with attempts reset to 0 (lastError kept). */
  retryDead(jobId: string): void {
    this.#withJob(jobId, (core, slot, now) => core.retryDead(slot, now));
    this.#memory.signal.bump();
  }

  /**
   * For worker loops: after a `poll` that returned nothing, sleeps until work
   * may have arrived (a submit, a retry, a failed attempt anywhere since that
   * poll began) or `timeoutMillis` pass, without blocking this thread's event
   * loop. Resolves true if woken by new work. Jobs that become ready by the
   * clock alone (a delayed runAt, a backoff) wake no one: cap the timeout.
   */
  waitForWork(timeoutMillis: number): Promise<boolean> {
    try {
      this.#assertOpen();
      checkTimeout(timeoutMillis);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#memory.signal.wait(this.#signalSeen, timeoutMillis);
  }

  /** Cancels a PENDING job. */
  cancel(jobId: string): void {
    this.#withJob(jobId, (core, slot) => core.cancel(slot));
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
    return this.#locked((core) => core.stats());
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
    if (this.#closed) return;
    const link = this.#journal;
    let failure: unknown;
    if (link !== undefined) {
      clearTimeout(this.#commitTimer);
      try {
        // Everything noted so far, by any thread (also one since killed), is committed before the journal is let go.
        this.flush();
      } catch (error) {
        failure = error;
      }
      if (link.owner) link.journal.release();
      const closing = closeQuietly(link.journal);
      failure ??= closing;
    }
    this.#closed = true;
    if (failure !== undefined) throw failure;
  }

  // ── plumbing ───────────────────────────────────────────────────────────

  /**
   * Runs `op` under the queue lock (see `#underLock`). With a journal, the
   * call then returns only once what it changed is committed — except a
   * change no crash needs (see QueueCore#mustCommit: a lease, an extended
   * lease, an eviction), which the next commit of any thread takes along, at
   * most COMMIT_SOON_MILLIS later.
   */
  #locked<T>(op: (core: QueueCore, now: number) => T): T {
    if (this.#journal === undefined) return this.#underLock(op);
    let done = false;
    try {
      const result = this.#underLock(op);
      done = true;
      return result;
    } finally {
      const core = this.#core;
      const ticket = core.noted();
      if (ticket !== undefined) {
        // A refused call changed nothing of its own; what it brought up to now (an expiry) goes with the next commit.
        if (done && core.mustCommit()) this.#makeDurable(ticket, core.takeUndo());
        else this.#commitSoon(ticket);
      }
    }
  }

  /**
   * Group commit (see CommitRing): returns once `ticket` is in the journal.
   * One thread at a time leads, writing every change noted so far by any
   * thread in one transaction; the others wait for it, and most find their
   * ticket committed when their turn comes.
   *
   * A write that fails throws a JournalWriteError, and the leader first
   * undoes `undo` (the moves of its own call, see UndoLog). A thread waiting
   * for that failed commit leads next, writes again, and, if that fails too,
   * undoes its own: so every call whose changes were in a failed transaction
   * throws, and is undone, by its own thread. The undo runs under the
   * leader's lock, so that no other leader can write the moves it takes back.
   */
  #makeDurable(ticket: number, undo: readonly UndoneMove[] = []): void {
    const commits = this.#memory.commits;
    const since = performance.now();
    while (!commits.isDurable(ticket)) {
      // A leader that leads for longer than the lock timeout may have died mid-commit: `acquire` takes its lock over.
      const leading = performance.now() - since < this.#options.lockTimeoutMillis ? commits.leader.tryAcquire() : (commits.leader.acquire(), true);
      if (!leading) {
        commits.awaitCommit(COMMIT_NAP_MILLIS);
        continue;
      }
      try {
        if (commits.isDurable(ticket)) break;
        const { writes, upTo } = this.#underLock((core) => core.pendingWrites());
        try {
          // Outside the queue lock: other threads go on working while the journal writes.
          this.#journal!.journal.write(writes);
        } catch (error) {
          if (error instanceof JournalWriteError) this.#rollBack(undo);
          throw error;
        }
        commits.publish(upTo);
      } finally {
        commits.leader.release();
      }
    }
  }

  /** Undoes a call's own moves (see QueueCore#rollBack); the next commit takes the undo to the journal. */
  #rollBack(moves: readonly UndoneMove[]): void {
    if (moves.length === 0) return;
    this.#underLock((core, now) => core.rollBack(moves, now));
    const ticket = this.#core.noted();
    if (ticket !== undefined) this.#commitSoon(ticket);
  }

  #commitSoon(ticket: number): void {
    this.#soonTicket = ticket;
    this.#commitTimer ??= setTimeout(() => {
      this.#commitTimer = undefined;
      if (this.#closed) return;
      try {
        this.#makeDurable(this.#soonTicket);
      } catch {
        // Nobody waits for this commit: the next durable call retries it and reports a failure to its caller.
      }
    }, COMMIT_SOON_MILLIS).unref();
  }

  /** Runs `op` under the queue lock, after repairing a dead holder's damage and bringing the queue up to now. */
  #underLock<T>(op: (core: QueueCore, now: number) => T): T {
    this.#assertOpen();
    const { lock } = this.#memory;
    const core = this.#core;
    for (;;) {
      const seen = this.#now();
      const repair = lock.acquire();
      let now = seen;
      try {
        try {
          now = core.prepare(seen, repair, () => this.#now());
          return op(core, now);
        } catch (error) {
          // A commit under the lock failed (a full commit ring, a token reservation): undo the call's moves so far.
          if (error instanceof JournalWriteError) undoUnderLock(core, now);
          throw error;
        }
      } catch (error) {
        // Our lock was taken over mid-call (we were presumed dead): the move did not happen; start again.
        if (!(error instanceof LockLost)) throw error;
        // Nor may its staged edits show through this thread's reads on the retry.
        this.#memory.slots.abandon();
      } finally {
        lock.release();
      }
    }
  }

  /**
   * Runs `op` on the slot of `jobId`; a negative result is a refusal and
   * becomes the matching error. (Tokens are not checked here: one that is not
   * even a number is simply not the job's current lease, which the core
   * refuses as stale once the id is found.)
   */
  #withJob<T>(jobId: string, op: (core: QueueCore, slot: number, now: number) => T): T {
    const jobNum = parseJobId(jobId);
    for (;;) {
      const result = this.#locked((core, now): T | typeof AWAITS_COMMIT => {
        const slot = core.find(jobNum);
        if (slot < 0) throw refusalError(slot, jobId, this.#options.capacity);
        const result = op(core, slot, now);
        if (result === AWAITS_COMMIT) return AWAITS_COMMIT;
        if (typeof result === 'number' && result < 0) throw refusalError(result, jobId, this.#options.capacity);
        return result;
      });
      if (result !== AWAITS_COMMIT) return result;
      // The job is frozen by another call's commit in flight: once that is through (or undone), look again.
      this.#makeDurable(this.#core.awaitedTicket());
    }
  }

  #now(): number {
    return checkNow(this.#time.now());
  }

  #assertOpen(): void {
    if (this.#closed) throw new IllegalStateError('This queue was closed');
  }
}

/**
 * Undoes the current call's moves inside its own lock hold, and rebuilds the
 * hints it may have left half-updated. Taken for dead meanwhile (LockLost),
 * the taker has rebuilt from the slots, and what is not undone yet stays
 * frozen until the next commit that succeeds: the journal error is still the
 * one to report.
 */
function undoUnderLock(core: QueueCore, now: number): void {
  try {
    core.rollBack(core.takeUndo(), now);
  } catch (error) {
    if (!(error instanceof LockLost)) throw error;
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

function toView(job: JobRecord): JobView {
  const status = NAME_OF_STATUS[job.status];
  return {
    id: `J${job.jobNum}`,
    type: job.type,
    priority: job.priority,
    status,
    attempts: job.attempts,
    nextRunAt: job.runAt,
    lastError: job.lastError,
    payload: job.payload,
    leaseUntil: status === JobStatus.RUNNING ? job.leaseUntil : null,
    workerId: job.workerId,
  };
}


