import { ProducerTracing } from '../tracing/producer.js';
import type { TimeSource } from '../clock.js';
import { IllegalStateError, JournalWriteError, Refusal, refusalError } from '../errors.js';
import type { Journal, Synchronous } from '../journal/journal.js';
import type { FilledOptions } from '../options.js';
import type { RetryPolicy } from '../policy.js';
import { step, assertHeld, AWAITS_COMMIT, FINISH_RING, type JournalNotes, JOURNAL_RELEASED, LEASE_RING, LockLost, Maintenance, MAINTENANCE_ROW, Mover, NO_ROW, NOTHING_TO_UNDO, type QueueMemory, type Undo, WorkerPath } from '../shm/core.js';
import { readNow } from '../validate/clock.js';

/** This thread's connection to the queue's journal; the opening thread's also holds the ownership. */
export interface JournalLink {
  path: string;
  synchronous: Synchronous;
  journal: Journal;
  owner: boolean;
}

/** Longest a change that no caller waits for stays out of the journal, unless another commit takes it sooner. */
const COMMIT_SOON_MILLIS = 5;
/** Longest a thread sleeps for another thread's commit before it looks again (a leader wakes it sooner). */
const COMMIT_NAP_MILLIS = 1;
/** What a hold of the lock is for (see `#underLock`), which decides what happens around its op. */
interface Hold {
  /** A durable call's hold ends by taking its commit's writes, if no thread leads. */
  readonly lead: boolean;
  /** The hold is a call's own (not a commit's or an undo's), which a released journal refuses. */
  readonly call: boolean;
  /**
   * The hold undoes a call whose commit failed. The `retain` option's
   * evictions wait for the next hold: made first, they would count the
   * call's finished jobs as if it had not failed, and stay.
   */
  readonly undo: boolean;
}

/** A hold for a commit's snapshot, a journal let go, or any call of a queue without a journal. */
const PLAIN_HOLD: Hold = { lead: false, call: false, undo: false };
/** A call of a journaled queue, which returns once its changes are committed. */
const DURABLE_CALL_HOLD: Hold = { lead: true, call: true, undo: false };
/** The undo of a call whose commit failed. */
const UNDO_HOLD: Hold = { lead: false, call: false, undo: true };

/** Marks the journal let go by its opener (see JOURNAL_RELEASED), as a locked op made once. */
const markReleased = (_core: Maintenance, _now: number, lockWords: Int32Array): void => {
  // Under the queue lock: a call of another view either ran before (and is committed by the opener's last flush) or is refused.
  step.store(lockWords, JOURNAL_RELEASED, 1);
};

type PendingWrites = ReturnType<JournalNotes['pendingWrites']>;

/** A snapshot of every noted change, as a locked op made once. */
const takeWrites = (core: Maintenance): PendingWrites => core.notes.pendingWrites();

/**
 * What every side of one JobQueue instance shares: its views of the memory,
 * its row and worker path, and the way to run an operation under the
 * maintenance lock (with the journal's group commit, if there is a journal).
 */
export class QueueContext {
  readonly time: TimeSource;
  readonly policy: RetryPolicy;
  readonly options: FilledOptions;
  readonly memory: QueueMemory;
  readonly core: Maintenance;
  readonly journal: JournalLink | undefined;
  /** The create spans of a traced queue's submits (the `tracing` option); undefined when it is not traced. */
  readonly tracing: ProducerTracing | undefined;
  /** This instance's worker path: on its own row, or (none free, or a journal) the maintenance row's, under the lock only. */
  worker: WorkerPath;
  /** Whether worker calls may run lock-free: an in-memory queue whose instance owns a row. */
  lockFree: boolean;
  /** Whether this instance owns a row (else it moves through the maintenance row, under the lock). */
  ownsRow = false;
  closed = false;
  #commitTimer: NodeJS.Timeout | undefined;
  #soonTicket = 0;
  /** The writes a durable call took at the end of its lock hold, the leader's lock with them (see #leadEarly); its makeDurable writes them. */
  #taken: PendingWrites | undefined;
  /** `now`, made once: a locked call hands it to Maintenance#prepare without a closure per call. */
  readonly #readClock = (): number => this.now();

  constructor(time: TimeSource, policy: RetryPolicy, options: FilledOptions, memory: QueueMemory, journal: JournalLink | undefined) {
    this.time = time;
    this.policy = policy;
    this.options = options;
    this.memory = memory;
    this.journal = journal;
    this.tracing = options.tracing === false ? undefined : new ProducerTracing(options.tracing.name);
    this.core = new Maintenance(memory, policy, time, options.retain, journal?.journal);
    this.worker = this.#workerPath();
    this.lockFree = false;
    this.locked(() => this.#takeRow());
  }

  /**
   * Takes a row of this instance's own (under the lock), for its moves, locked
   * or not; without one (all taken), every call of this instance takes the
   * lock and moves through the maintenance row. Worker calls run lock-free
   * only on a row of their own and without a journal.
   */
  #takeRow(): void {
    const row = this.memory.rows.acquire();
    if (row === NO_ROW) return;
    const mover = new Mover(this.memory, row);
    this.core.mover = mover;
    this.worker = this.#workerPath();
    this.ownsRow = true;
    this.lockFree = this.journal === undefined;
  }

  /** The worker calls' path through the core's mover as it is now (on this instance's row, or the maintenance row). */
  #workerPath(): WorkerPath {
    return new WorkerPath(this.memory, this.core.mover, this.core, this.core.records, this.time, this.journal === undefined ? undefined : this.core.notes);
  }

  /**
   * Under the lock: a revoked row (presumed dead while only slow), or one
   * reclaimed, is exchanged for a new one, and the watchers that misjudged
   * this live thread grow more patient; tokens refilled.
   */
  prepareWorker(): WorkerPath {
    const { rows } = this.memory;
    if (this.ownsRow && !rows.ownedHere(this.worker.row)) {
      this.memory.patience.misjudged();
      this.lockFree = false;
      this.ownsRow = false;
      this.core.mover = new Mover(this.memory, MAINTENANCE_ROW);
      this.worker = this.#workerPath();
      this.#takeRow();
    }
    const worker = this.worker;
    // A full ring is emptied into its heap now.
    if (!rows.hasRoom(worker.row, LEASE_RING)) this.core.filing.drainLeases();
    if (!rows.hasRoom(worker.row, FINISH_RING)) this.core.filing.drainFinished();
    worker.refill();
    return worker;
  }

  /** Frees the rows of thread `exited`, which has exited (see JobQueue#threadExited); returns how many. */
  reclaimRowsOf(exited: number): number {
    return this.locked((core, now) => {
      const { rows, helping } = this.memory;
      // Known dead: a row it left inside a lock-free call is revoked now, not after lockTimeoutMillis of watching, and the rebuild finishes its move.
      const inCall = rows.inCallOf(exited);
      if (inCall.length > 0) {
        helping.revoke(inCall);
        core.rebuilder.rebuild(now);
      }
      // Its reservations can never be submitted now: their runs are freed (keeps I30).
      core.reserved.reclaim((entry) => entry.thread === exited);
      return rows.reclaim(exited);
    });
  }

  /** Gives back this instance's reservations not yet submitted (at close): nobody can submit them now. */
  releaseReservations(): void {
    if (this.core.reserved.pending > 0) this.locked((core) => core.reserved.releaseAll());
  }

  /** Gives the row back (at close). */
  releaseRow(): void {
    if (this.ownsRow) this.memory.rows.release(this.worker.row);
    this.lockFree = false;
    this.ownsRow = false;
  }

  now(): number {
    return readNow(this.time);
  }

  /** At the start of every call: refuses a closed view, and one whose journal its opener let go. */
  assertOpen(): void {
    this.#assertNotClosed();
    this.#assertJournalHeld();
  }

  #assertNotClosed(): void {
    if (this.closed) throw new IllegalStateError('This queue was closed');
  }

  /**
   * With a journal, refuses a view attached to it once its opener let it go
   * (see JOURNAL_RELEASED). A locked call checks again under the queue lock,
   * so that the opener's last flush commits every call that got past it;
   * the commit that ends such a call is not refused (see #underLock).
   */
  #assertJournalHeld(): void {
    const link = this.journal;
    if (link === undefined || link.owner || step.load(this.memory.lockWords, JOURNAL_RELEASED) === 0) return;
    throw new IllegalStateError(`The journal ${link.path} was closed by the view that opened it: this view, attached to it, can no longer be used`);
  }

  /**
   * Runs `op` on the slot of job number `jobNum` under the lock; a negative
   * result is a refusal and becomes the matching error. A job frozen by
   * another call's commit in flight (AWAITS_COMMIT) is looked at again once
   * that commit is through, or undone.
   */
  withJob<T>(jobId: string, jobNum: number, op: (core: Maintenance, slot: number, now: number) => T): T {
    for (;;) {
      const result = this.locked((core, now): T | typeof AWAITS_COMMIT => {
        const slot = core.find(jobNum);
        if (slot < 0) throw refusalError(slot, jobId, this.options.capacity);
        core.catchUp.catchUpLapsed(slot, now);
        let result = op(core, slot, now);
        // A lease refused as a cancel ended it, that cancel's commit still in flight: looked at once it is through (keeps I21).
        if (result === Refusal.StaleLease && this.journal !== undefined) result = core.refusalOnceDurable(slot, Refusal.StaleLease) as T;
        if (result === AWAITS_COMMIT) return AWAITS_COMMIT;
        if (typeof result === 'number' && result < 0) throw refusalError(result, jobId, this.options.capacity);
        return result;
      });
      if (result !== AWAITS_COMMIT) return result;
      this.makeDurable(this.core.notes.awaitedTicket());
    }
  }

  /**
   * `withJob` for a call that only reads the job (a view): what it returns
   * was read while the lock was this thread's (see `read`).
   */
  readJob<T>(jobId: string, jobNum: number, op: (core: Maintenance, slot: number, now: number) => T): T {
    return this.withJob(jobId, jobNum, (core, slot, now) => this.#whileHeld(op(core, slot, now)));
  }

  /**
   * `locked` for a call that only reads (stats, a listing, a table's
   * entries): what it returns was read while the lock was this thread's. A
   * holder taken for dead reads on beside its taker's rebuild, which
   * rewrites the heaps, the counts and the listing as it reads them; it
   * looks at the lock once it has read, and, taken over, reads again under
   * the lock it waits for (keeps I13). A call that moved a job reports its
   * move instead (see publishDueIfHeld): a read has none to report. A
   * refusal gets no such look: it is decided from a slot word read with a
   * look at the lock after it (CatchUp#settledWord) — save a job number the
   * job map lacks, which a taker's rebuild may be refilling (two stalls
   * reach it; no stalled history has).
   */
  read<T>(op: (core: Maintenance, now: number) => T): T {
    return this.locked((core, now) => this.#whileHeld(op(core, now)));
  }

  /** `value`, read under the lock, if the lock is still this thread's; else LockLost, and `#underLock` starts the call again. */
  #whileHeld<T>(value: T): T {
    assertHeld(this.memory.lock);
    return value;
  }

  /**
   * The opener's close, before it lets the journal go: from here on no other
   * view starts a call (see JOURNAL_RELEASED); what they did before is
   * committed by the flush that follows.
   */
  releaseJournal(): void {
    this.#underLock(markReleased, this.memory.lockWords);
  }

  /**
   * Returns once every change made so far, by any thread, is in the journal
   * (see JobQueue#flush). Without a journal, at once.
   */
  flush(): void {
    this.assertOpen();
    this.commitNoted();
  }

  /** Commits everything noted so far, by any thread (flush without its checks: close's, also of a view whose journal was let go). */
  commitNoted(): void {
    if (this.journal !== undefined) this.makeDurable(this.memory.commits.head());
  }

  /**
   * Runs `op` under the maintenance lock (see `#underLock`). With a journal,
   * the call then returns only once what it changed is committed — except a
   * change no crash needs (see JournalNotes#mustCommit: a lease, an extended
   * lease, an eviction), which the next commit of any thread takes along, at
   * most COMMIT_SOON_MILLIS later.
   *
   * `arg` is handed to `op`: a hot caller passes one function made once and
   * its argument, rather than a new closure per call.
   */
  locked<T, A = undefined>(op: (core: Maintenance, now: number, arg: A) => T, arg?: A): T {
    if (this.journal === undefined) return this.#underLock(op, arg);
    let done = false;
    try {
      const result = this.#underLock(op, arg, DURABLE_CALL_HOLD);
      done = true;
      return result;
    } finally {
      const core = this.core;
      const ticket = core.notes.noted();
      if (ticket !== undefined) {
        // A refused call changed nothing of its own; what it brought up to now (an expiry) goes with the next commit.
        if (done && core.notes.mustCommit()) this.makeDurable(ticket, core.notes.takeUndo());
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
   * undoes `undo` (its own call's moves and evictions, see UndoLog). A thread waiting
   * for that failed commit leads next, writes again, and, if that fails too,
   * undoes its own: so every call whose changes were in a failed transaction
   * throws, and is undone, by its own thread. The undo runs under the
   * leader's lock, so that no other leader can write the moves it takes back.
   */
  makeDurable(ticket: number, undo: Undo = NOTHING_TO_UNDO): void {
    const commits = this.memory.commits;
    const taken = this.#taken;
    this.#taken = undefined;
    // The call's own lock hold took the writes and the leader's lock already (see #leadEarly).
    if (taken !== undefined) this.#lead(taken, undo);
    const since = step.monotonicMillis();
    while (!commits.isDurable(ticket)) {
      // A leader that leads for longer than the queue's patience may have died mid-commit: `acquire` takes its lock over.
      const leading = step.monotonicMillis() - since < this.memory.patience.millis() ? commits.leader.tryAcquire() : (commits.leader.acquire(), true);
      if (!leading) {
        commits.awaitCommit(COMMIT_NAP_MILLIS);
        continue;
      }
      if (commits.isDurable(ticket)) {
        commits.leader.release();
        break;
      }
      let pending: PendingWrites;
      try {
        pending = this.#underLock(takeWrites);
      } catch (error) {
        commits.leader.release();
        throw error;
      }
      this.#lead(pending, undo);
    }
  }

  /**
   * As the leader (its lock held, and released here): writes `pending` in one
   * transaction and publishes it; a write that fails first undoes `undo`.
   */
  #lead({ writes, upTo }: PendingWrites, undo: Undo): void {
    const commits = this.memory.commits;
    try {
      try {
        // Outside the queue lock: other threads go on working while the journal writes.
        this.journal!.journal.write(writes);
      } catch (error) {
        if (error instanceof JournalWriteError) this.#rollBack(undo);
        throw error;
      }
      commits.publish(upTo);
    } finally {
      commits.leader.release();
    }
  }

  /**
   * At the end of a locked call that must be durable (still under its lock):
   * if no thread leads a commit, this one takes the leader's lock and the
   * writes now, so that its commit needs no second lock hold. A snapshot that
   * fails is left to makeDurable's own, which reports it.
   */
  #leadEarly(core: Maintenance): void {
    if (core.notes.noted() === undefined || !core.notes.mustCommit()) return;
    const leader = this.memory.commits.leader;
    if (!leader.tryAcquire()) return;
    try {
      this.#taken = core.notes.pendingWrites();
    } catch {
      leader.release();
    }
  }

  /** Undoes a call's own moves and evictions (see Maintenance#rollBack); the next commit takes the undo to the journal. */
  #rollBack(undo: Undo): void {
    if (undo === NOTHING_TO_UNDO) return;
    this.#underLock((core, now) => core.rollBack(undo, now), undefined, UNDO_HOLD);
    const ticket = this.core.notes.noted();
    if (ticket !== undefined) this.#commitSoon(ticket);
  }

  #commitSoon(ticket: number): void {
    this.#soonTicket = ticket;
    this.#commitTimer ??= setTimeout(() => {
      this.#commitTimer = undefined;
      if (this.closed) return;
      try {
        this.makeDurable(this.#soonTicket);
      } catch {
        // Nobody waits for this commit: the next durable call retries it and reports a failure to its caller.
      }
    }, COMMIT_SOON_MILLIS).unref();
  }

  stopCommitTimer(): void {
    clearTimeout(this.#commitTimer);
  }

  /**
   * Runs `op` under the lock: repairs a dead holder's damage and brings the
   * queue up to now first, and publishes when maintenance is next due after.
   */
  #underLock<T, A = undefined>(op: (core: Maintenance, now: number, arg: A) => T, arg?: A, hold = PLAIN_HOLD): T {
    // Not assertOpen: a commit or an undo finishes a call that was let in, also once the journal is let go.
    this.#assertNotClosed();
    const { lock } = this.memory;
    const core = this.core;
    for (;;) {
      const repair = lock.acquire();
      let now = 0;
      try {
        if (hold.call) this.#assertJournalHeld();
        let result: T;
        try {
          now = core.prepare(repair, this.#readClock, !hold.undo);
          result = op(core, now, arg as A);
        } catch (error) {
          // A commit under the lock failed (a full commit ring, a token reservation): undo the call's moves so far.
          if (error instanceof JournalWriteError) undoUnderLock(core, now);
          throw error;
        } finally {
          // Also after a refusal: the pass may have expired leases or promoted jobs.
          publishDueIfHeld(core);
        }
        if (hold.lead) this.#leadEarly(core);
        return result;
      } catch (error) {
        // Our lock was taken over mid-call (we were presumed dead): the move did not happen; start again.
        if (!(error instanceof LockLost)) throw error;
      } finally {
        lock.release();
      }
    }
  }
}

/**
 * Publishes when maintenance is next due, unless the lock was taken over
 * meanwhile: then the call's moves stand and are reported (a claim, once
 * decided, is the caller's lease; started again, the call would lease the
 * job a second time or find it gone), and the publishing is the taker's,
 * whose rebuild files and publishes, or the next holder's (this holder's
 * release marks the hints stale).
 */
function publishDueIfHeld(core: Maintenance): void {
  try {
    core.filing.publishDue();
  } catch (error) {
    if (!(error instanceof LockLost)) throw error;
  }
}

/**
 * Undoes the current call's moves inside its own lock hold, and rebuilds the
 * hints it may have left half-updated. Taken for dead meanwhile (LockLost),
 * the taker has rebuilt from the slots, and what is not undone yet stays
 * frozen until the next commit that succeeds: the journal error is still the
 * one to report.
 */
function undoUnderLock(core: Maintenance, now: number): void {
  try {
    core.rollBack(core.notes.takeUndo(), now);
  } catch (error) {
    if (!(error instanceof LockLost)) throw error;
  }
}
