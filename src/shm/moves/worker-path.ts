import * as step from '../memory/steps.js';
import { Refusal } from '../../errors.js';
import {
  ATTENTION, DUE_LOWERED, DUE_PUBLISHING, FINISH_RING, LEASE_LENGTH, LEASE_RING, LEASE_UNTIL, MOVES, RUNNING, TOKEN, fieldBit, isBusy, statusOf,
  type SlotStatus,
} from '../memory/layout.js';
import { laterReading, type TimeSource } from '../../clock.js';
import type { QueueMemory } from '../queue-memory.js';
import type { Mover } from '../protocol/mover.js';
import { ABORT, CLAIMED, FROZEN, LOST, NOTHING_READY, POLL_ABORTED, POLL_REWRITING, type Claimer } from '../tables/ready.js';
import { chunksOf, type LeaseStrings, type Records } from '../records.js';
import { MoveEvent, noteMove } from '../move-events.js';
import { assertHeld } from '../protocol/lock-held.js';
import { claimJob } from './claim.js';
import { completeJob } from './complete.js';
import { extendLease } from './extend.js';
import { reportProgress } from './progress.js';

/** A worker-path result that means: take the maintenance lock and do it there (a BUSY slot that stays busy, a map miss). */
export const SLOW = -100;

/**
 * The journal's hooks (journaled queues make every move under the lock): a
 * move is noted just before it is made; a durable one of the call's own
 * (a complete) with what undoes it; a poll stops at a frozen job and waits
 * for its commit (see Frozen jobs in layout.ts).
 */
export interface MoveNotes {
  noteLazyMove(slot: number, word: number, status: SlotStatus): void;
  noteOwnMove(slot: number, word: number, status: SlotStatus): void;
  /** Whether the job in `slot` is frozen by a commit in flight; if so, that commit is the one to wait for (see JournalNotes#awaitedTicket). */
  awaitsCommit(slot: number): boolean;
}

/**
 * What the maintenance lock holder gives a row: its token blocks, and, for
 * a claim under the lock, the say of the job type's rate limit (see
 * rate-limits.ts; lock-free claims never run while a limit exists).
 */
export interface LockHolder {
  reserveTokens(count: number): number;
  /** Whether the ready job at (slot, word) may be leased at `now`; if not, it is held until its type's window opens. */
  admits(slot: number, word: number, now: number): boolean;
  /** Counts the lease just made of the job in `slot` against its type's limit. */
  leased(slot: number): void;
  /** Whether a locked poll may claim at all: not while the queue's concurrency cap is reached (see HeldJobs#mayClaim). */
  mayClaim(): boolean;
}

/** Tokens a row reserves at a time (one locked call per block). */
const ROW_TOKEN_BLOCK = 1024;

const MOVES_BIT = fieldBit(MOVES);

/**
 * The worker path: claim, complete, extend and progress (claim.ts, complete.ts,
 * extend.ts, progress.ts), as one row makes them: what the row checks before each (its
 * lease, its tokens, the lease's end) and the hints it leaves after (its
 * rings). The same code runs lock-free (an in-memory queue's common case) and under the
 * maintenance lock (when maintenance is due, and always with a journal): the
 * moves are CASes on lease words either way, so they race correctly with
 * other threads' lock-free moves.
 *
 * What it writes besides the slot: this row's counters and rings (see
 * rows.ts), and one shared word, FINISH_TICKET, by one Atomics.add per
 * complete (the eviction order; a notice follows only while a `finished`
 * waits, see finishes.ts).
 */
export class WorkerPath implements Claimer {
  readonly #m: QueueMemory;
  readonly #mover: Mover;
  readonly #row: number;
  readonly #notes: MoveNotes | undefined;
  #token = 0;
  #tokenEnd = 0;
  /** The lease a poll makes (its claims get the slot and word only): its length, and the `now` the call read. */
  #leaseMillis = 0;
  #now = 0;
  #worker = 0;
  /** Entries both rings can surely take (each claim, extend and complete takes at most one per ring). */
  #room = 0;
  /** Where the last extend that succeeded left its lease's end. */
  extendedUntil = 0;

  readonly #holder: LockHolder;
  readonly #time: TimeSource;
  #locked = false;
  readonly #records: Records;
  /** The strings of the lease the last claim made, decoded before its CAS (see Records#readLeaseStrings). */
  readonly leaseStrings: LeaseStrings = { type: '', payload: '', headersText: null };

  constructor(memory: QueueMemory, mover: Mover, holder: LockHolder, records: Records, time: TimeSource, notes?: MoveNotes) {
    this.#m = memory;
    this.#mover = mover;
    this.#row = mover.row;
    this.#holder = holder;
    this.#records = records;
    this.#time = time;
    this.#notes = notes;
  }

  get row(): number {
    return this.#row;
  }

  /** The record this row's last move wrote (its intent): a lease is read from here, as the slot may move on at once. */
  get draft(): Float64Array {
    return this.#mover.draft;
  }

  /** Whether this row can take one more claim and complete without the lock: a token left, room in both rings. */
  ready(): boolean {
    if (this.#token >= this.#tokenEnd) return false;
    return this.hasRoom();
  }

  /** Whether both rings can take one more entry: all a progress report needs without the lock (it takes no token). */
  hasRoom(): boolean {
    // Room counted down locally: the shared drained positions are read again only when it runs out.
    if (this.#room > 0) return true;
    const rows = this.#m.rows;
    this.#room = Math.min(rows.room(this.#row, LEASE_RING), rows.room(this.#row, FINISH_RING));
    return this.#room > 0;
  }

  /** Under the lock: a new block of tokens if this one is used up. */
  refill(): void {
    if (this.#token < this.#tokenEnd) return;
    this.#token = this.#holder.reserveTokens(ROW_TOKEN_BLOCK);
    this.#tokenEnd = this.#token + ROW_TOKEN_BLOCK;
  }

  /**
   * Leases the best ready job, lock-free, for `leaseMillis` to the worker
   * numbered `worker`; its slot, or POLL_ABORTED (take the lock). Rings only.
   *
   * It first looks for a lock holder of an older time than `now` at work
   * (see QueueMemory#holderBehind): a job it files, before the poll began by
   * the clock, may be the better one, and may be filed after the poll read
   * its ring; the locked poll waits for it. (One that takes the lock later
   * runs during the poll, and its job may or may not be seen.)
   */
  pollLockFree(worker: number, leaseMillis: number, now: number): number {
    this.#startPoll(worker, leaseMillis, now, false);
    return this.#m.holderBehind(now) ? POLL_ABORTED : this.#m.ready.poll(now, this);
  }

  /** `pollLockFree` under the maintenance lock: rings and overflow heap; the slot, or a negative answer (see ReadyIndex#pollLocked). */
  pollLocked(worker: number, leaseMillis: number, now: number): number {
    this.#startPoll(worker, leaseMillis, now, true);
    if (!this.#holder.mayClaim()) return NOTHING_READY;
    let slot = this.#m.ready.pollLocked(now, this);
    // The level table stays mid-rewrite: a holder taken for dead still running, or this thread is the one taken for
    // dead and its successor is inside a rewrite. LockLost then sends the call back to the lock, whose patience waits
    // for the successor, instead of spinning on its rewrite.
    while (slot === POLL_REWRITING) {
      assertHeld(this.#m.lock);
      slot = this.#m.ready.pollLocked(now, this);
    }
    // No lease: an answer read from the rings, as good as the lock it was read under (a holder taken for dead
    // may have read them as its successor rebuilt them). A lease needs no look: its claim looked (tryClaim).
    if (slot < 0) assertHeld(this.#m.lock);
    return slot;
  }

  /** What the claims of a poll need (they get the slot and word only). */
  #startPoll(worker: number, leaseMillis: number, now: number, locked: boolean): void {
    this.#worker = worker;
    this.#leaseMillis = leaseMillis;
    this.#now = now;
    this.#locked = locked;
  }

  tryClaim(slot: number, word: number): number {
    // With a journal only: a job whose move is still committing is not passed over, but waited for (the poll
    // stops): a call that saw the move may have returned, and a job that call saw ready must be leased before a worse one.
    if (this.#notes?.awaitsCommit(slot) === true) return FROZEN;
    // A job whose type's window is used up is passed over too, held until the window opens.
    if (this.#locked && !this.#holder.admits(slot, word, this.#now)) return LOST;
    const draft = this.#mover.draft;
    // What the claim reads, and its Lease shows: the CAS below proves the slot still held `word` as it was read.
    this.#m.slots.readLease(slot, draft);
    // Fencing tokens grow from lease to lease of a job: a block reserved before the job's last lease may be too low.
    if (draft[TOKEN]! >= this.#token) {
      if (!this.#locked) return ABORT;
      this.#token = this.#tokenEnd;
      this.refill();
    }
    // The job's own lease length wins over the poll's (submit's timeoutMillis).
    const ownLength = draft[LEASE_LENGTH]!;
    const startedAt = this.#leaseStart(this.#now, Infinity, this.#locked);
    if (Number.isNaN(startedAt)) return ABORT;
    const leaseUntil = startedAt + (ownLength > 0 ? ownLength : this.#leaseMillis);
    // A holder taken for dead leases nothing: it may have read rings its successor has rebuilt since. A takeover
    // after this look gives the job a new word in the successor's rebuild, and the claim's CAS fails.
    if (this.#locked) assertHeld(this.#m.lock);
    // Before the CAS, racing a remove or an edit that frees them: the CAS proves them whole (relies on I4).
    this.#records.readLeaseStrings(draft, this.leaseStrings);
    const to = claimJob(this.#mover, slot, word, this.#token, startedAt, leaseUntil, this.#worker, this.#noteLazyMove(slot, word, RUNNING));
    if (to < 0) return LOST;
    if (this.#locked) this.#holder.leased(slot);
    this.#token++;
    this.#registerLease(slot, to);
    this.#room--;
    return CLAIMED;
  }

  /**
   * Marks the job SUCCEEDED: 0, a Refusal, or SLOW. `resultRef` is the arena
   * chain of its result (under the lock only: the holder allocates), 0 for none.
   */
  complete(slot: number, jobNum: number, token: number, now: number, resultRef = 0): number {
    const { rows, finishes } = this.#m;
    for (;;) {
      const word = this.#leasedWord(slot, jobNum, token, now);
      if (word < 0) return this.#standingRefusal(word, slot, jobNum, token, now);
      const to = completeJob(this.#m, this.#mover, slot, word, now, resultRef, this.#notes);
      if (to < 0) continue; // moved meanwhile (an expiry): look again
      noteMove(this.#m, MoveEvent.Completed, this.#mover.draft, now);
      rows.finishedChunks(this.#row, chunksOf(this.#mover.draft));
      // Keyed by when it finished (for retention's age): the eviction order is the record's FINISH_SEQ.
      rows.append(this.#row, FINISH_RING, now, slot, to);
      this.#room--;
      finishes.announce();
      return 0;
    }
  }

  /**
   * The lease now lasts `leaseMillis` from now, lock-free: 0 (the new end is
   * then `extendedUntil`), a Refusal, or SLOW. Not the end itself: a clock may
   * read below zero, and an end there would pass for a Refusal.
   */
  extendLockFree(slot: number, jobNum: number, token: number, leaseMillis: number, now: number): number {
    return this.#extend(slot, jobNum, token, leaseMillis, now, false);
  }

  /** `extendLockFree` under the maintenance lock: a lease run out by the move's clock reading keeps the end from `now` (see #leaseEnd). */
  extendLocked(slot: number, jobNum: number, token: number, leaseMillis: number, now: number): number {
    return this.#extend(slot, jobNum, token, leaseMillis, now, true);
  }

  #extend(slot: number, jobNum: number, token: number, leaseMillis: number, now: number, locked: boolean): number {
    for (;;) {
      const word = this.#leasedWord(slot, jobNum, token, now);
      if (word < 0) return this.#standingRefusal(word, slot, jobNum, token, now);
      const leaseUntil = this.#leaseEnd(leaseMillis, now, this.#m.slots.leaseUntils[slot]!, locked);
      if (Number.isNaN(leaseUntil)) return SLOW;
      const to = extendLease(this.#mover, slot, word, leaseUntil, this.#noteLazyMove(slot, word, RUNNING));
      if (to < 0) continue;
      this.#registerLease(slot, to);
      this.#room--;
      this.extendedUntil = leaseUntil;
      return 0;
    }
  }

  /**
   * Sets the job's progress to `value` under the lease `token`: 0, a
   * Refusal, or SLOW. The lease keeps its end; the new word takes a new
   * lease ring entry with it (I3), as an extend's does. The same lock-free
   * and under the lock: no clock reading decides anything here but the
   * lease's validity at `now`, as for a complete.
   */
  progress(slot: number, jobNum: number, token: number, value: number, now: number): number {
    for (;;) {
      const word = this.#leasedWord(slot, jobNum, token, now);
      if (word < 0) return this.#standingRefusal(word, slot, jobNum, token, now);
      const to = reportProgress(this.#mover, slot, word, token, value, this.#m.slots.leaseUntils[slot]!, this.#noteLazyMove(slot, word, RUNNING));
      if (to < 0) continue;
      this.#registerLease(slot, to);
      this.#room--;
      return 0;
    }
  }

  /** With a journal: counts a move in the draft (MOVES, from the slot's); the mask bit of MOVES, or 0 without a journal. */
  #countMove(slot: number): number {
    if (this.#notes === undefined) return 0;
    this.#mover.draft[MOVES] = this.#m.slots.moves[slot]! + 1;
    return MOVES_BIT;
  }

  /** With a journal: counts a lazy move (a lease, an extend) from `word` to `status` and notes it; the mask bit of MOVES, or 0. */
  #noteLazyMove(slot: number, word: number, status: SlotStatus): number {
    const counted = this.#countMove(slot);
    this.#notes?.noteLazyMove(slot, word, status);
    return counted;
  }

  /**
   * The lease's end, from the clock read again just before the move's
   * decision: the call's `now` was read before it looked for the job, and
   * another thread may have moved the clock and looked at the slot since.
   * Under the lock, an extend whose lease has run out by that reading
   * (`before`, its old end; a claim's is Infinity) keeps the end from `now`:
   * it took effect before the clock passed the old end, and no catch-up
   * runs beside it.
   *
   * NaN (take the lock instead) lock-free, for such an extend: a catch-up
   * may have found the old lease run out already, and let its entry go
   * without waiting for this call (see Filing#validTop), so that the new
   * lease, ending before that catch-up's time, would be registered too late
   * for it. NaN too when the lock is held by an operation that runs at an
   * older time than this reading: its moves are still to come (a job it
   * files, perhaps a better one than this claim takes), and a claim of a
   * later time must not pass them.
   */
  #leaseEnd(leaseMillis: number, now: number, before: number, locked: boolean): number {
    return this.#leaseStart(now, before, locked) + leaseMillis;
  }

  /** The reading a lease made now begins at (see #leaseEnd, which adds its length; NaN: take the lock). A claim's STARTED_AT. */
  #leaseStart(now: number, before: number, locked: boolean): number {
    // An exclusive queue's calls follow one another in its one thread: `now` is the reading.
    if (this.#m.exclusive) return now;
    const fresh = laterReading(this.#time, now);
    if (!locked && (fresh >= before || this.#m.holderBehind(fresh))) return NaN;
    return fresh < before ? fresh : now;
  }

  /**
   * A refusal (`refusal`, from #leasedWord) that this call can stand by, or
   * SLOW. Lock-free, a holder of an older time than `now` may yet change the
   * job (evict it, extend its lease): then the locked path, after it,
   * decides. Otherwise the slot is read again: a holder that takes the lock
   * from here on runs at `now` or later, so what that read shows holds at `now`.
   * Nor while another thread holds the lock as that read ends: it may have
   * placed the job and not filed it yet (or died there), and a refusal that
   * shows the job exists must not come before a poll that cannot see it
   * (I16, as for a lock-free view).
   */
  #standingRefusal(refusal: number, slot: number, jobNum: number, token: number, now: number): number {
    if (refusal === SLOW || this.#m.holderBehind(now)) return SLOW;
    return this.#leasedWord(slot, jobNum, token, now) === refusal && !this.#m.lock.heldElsewhere() ? refusal : SLOW;
  }

  /**
   * The slot's word (not BUSY) if `token` is the current, valid lease of job
   * `jobNum` there; else a Refusal, or SLOW (busy for long, or the slot
   * reused for another job since the map was read: the locked path decides).
   */
  #leasedWord(slot: number, jobNum: number, token: number, now: number): number {
    const slots = this.#m.slots;
    const word = slots.settledWord(slot);
    if (isBusy(word) || slots.jobNums[slot] !== jobNum || statusOf(word) === 0) return SLOW;
    if (statusOf(word) !== RUNNING || slots.tokens[slot] !== token || !(now < slots.leaseUntils[slot]!)) return Refusal.StaleLease;
    return word;
  }

  /**
   * Registers a lease for expiry: in this row's lease ring, which the lock
   * holder drains. The handshake with the holder (see Filing#publishDue):
   * the ring's tail is published first, then NEXT_DUE read (both seq-cst); a lease
   * earlier than that NEXT_DUE sets DUE_LOWERED, so the next
   * call does maintenance. Either the holder's re-read of the tails sees this
   * entry, or this read sees the holder's new NEXT_DUE.
   */
  #registerLease(slot: number, word: number): void {
    const { rows, lockWords } = this.#m;
    // From the draft the move wrote, not an argument: a float64 argument is boxed, one allocation per lease.
    const leaseUntil = this.#mover.draft[LEASE_UNTIL]!;
    rows.append(this.#row, LEASE_RING, leaseUntil, slot, word);
    // A seq-cst load after the tail's seq-cst store (keeps I14, with Filing#publishDue).
    const nextDue = this.#m.nextDueInOrder();
    // Rare (a lease shorter than the others, or, when none is due, than NOTHING_DUE_MILLIS: see filing.ts; or a holder
    // recomputing NEXT_DUE, whose drain may have passed this ring already): one RMW.
    if (leaseUntil < nextDue || nextDue === DUE_PUBLISHING) step.or(lockWords, ATTENTION, DUE_LOWERED);
  }
}
