import { laterReading, type TimeSource } from '../../clock.js';
import type { RetryPolicy } from '../../policy.js';
import { JobStatus } from '../../types.js';
import type { Filing } from '../maintenance/filing.js';
import type { JournalNotes } from '../journal/journal-notes.js';
import {
  ATTEMPTS, ATTEMPT_LIMIT, CANCELLED, COMMIT_MOVED, COMMIT_SUBMITTED, DATA_REF, DEAD, DELAYED, ERROR_BYTES, ERROR_NONE, ERROR_REF, FINISH_BASE, FINISHED_AT, FREE, HEADERS_BYTES,
  HEADERS_REF, JOB_NUM, KEY_BYTES, KEY_REF, KEY_TTL, LEASE_LENGTH, LEASE_UNTIL, MOVES, PAYLOAD_BYTES, PRIORITY, READY, RESULT_BYTES, RESULT_REF, RUNNING,
  RUN_AT, SUCCEEDED, TOKEN, TYPE, WORKER, ALL_FIELDS, attemptLimit, fieldBit, mayRetry, type SlotStatus,
} from '../memory/layout.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { LoggedJob } from '../journal/movelog.js';
import type { MoverHolder } from '../protocol/mover.js';
import { noteFinish } from '../records.js';
import type { Room } from '../maintenance/room.js';
import type { UndoneEviction, UndoneMove } from '../journal/undo-log.js';
import { NOT_COUNTED } from './worker-path.js';

/**
 * The moves the maintenance lock holder makes of a job (each keeps I2 and I4
 * through Mover#apply): a new job placed from its draft, a job moved with the
 * draft as its new record (noted for the journal, then filed where its
 * status needs it), a failed attempt, a journaled job put back, and the
 * moves of a commit that failed undone.
 */
export class JobMoves {
  readonly #m: QueueMemory;
  readonly #policy: RetryPolicy;
  /** The queue's clock, read again as a move is made (`freshRunAt`). */
  readonly #time: TimeSource;
  /** Whether the queue has a journal: then each move counts in the record's MOVES. */
  readonly #journaled: boolean;
  readonly #filing: Filing;
  readonly #notes: JournalNotes;
  /** Where a new job's slot and strings come from, and an old error's chain goes back to. */
  readonly #room: Room;
  readonly #holder: MoverHolder;
  /** The fields the new job's draft sets so far (see `newDraft`): what a never-used slot takes of it. */
  #newFields = 0;
  /** The new job's slot's free word, read as its draft began (see `newDraft`): the word `place` moves from. */
  #freeWord = 0;

  constructor(
    memory: QueueMemory, policy: RetryPolicy, time: TimeSource, journaled: boolean, filing: Filing, notes: JournalNotes, room: Room, holder: MoverHolder,
  ) {
    this.#m = memory;
    this.#policy = policy;
    this.#time = time;
    this.#journaled = journaled;
    this.#filing = filing;
    this.#notes = notes;
    this.#room = room;
    this.#holder = holder;
  }

  /** A journaled job back in a free slot, as the journal holds it. */
  restoreJob(job: LoggedJob, now: number): void {
    const { typeNames, workerNames } = this.#m;
    const errorRef = job.lastError === null ? ERROR_NONE : this.#room.storeError(job.lastError);
    const slot = this.#room.takeSlot();
    const typeBytes = Buffer.byteLength(job.type);
    this.newDraft(slot, job.num, job.type, typeNames.numberOf(job.type), typeBytes, job.payload, Buffer.byteLength(job.payload), job.priority, job.runAt);
    this.setField(ATTEMPTS, job.attempts);
    this.setField(TOKEN, job.token);
    // One field, by status: the lease's end while RUNNING, the finish order once finished.
    this.setField(LEASE_UNTIL, job.status === JobStatus.SUCCEEDED || job.status === JobStatus.CANCELLED ? job.finishSeq : job.leaseUntil);
    this.setField(ERROR_REF, errorRef);
    this.setField(ERROR_BYTES, errorRef > 0 ? Buffer.byteLength(job.lastError!) : 0);
    this.setField(WORKER, job.workerId === null ? 0 : workerNames.numberOf(job.workerId));
    this.setField(MOVES, this.#journaled ? job.moves : 0);
    this.setField(ATTEMPT_LIMIT, job.maxAttempts);
    if (job.result !== null) {
      const bytes = Buffer.byteLength(job.result);
      this.setField(RESULT_REF, this.#m.arena.storeCounted(bytes, job.result));
      this.setField(RESULT_BYTES, bytes);
    }
    this.setField(LEASE_LENGTH, job.timeout);
    if (job.key !== null) this.storeKey(job.key, Buffer.byteLength(job.key), job.keyTtl);
    this.setField(FINISHED_AT, job.finishedAt);
    if (job.headers !== null) this.storeHeaders(job.headers);
    const status = STATUS_OF_NAME[job.status];
    this.place(slot, job.num, status === READY && job.runAt > now ? DELAYED : status);
  }

  /**
   * The draft of a new job for the free `slot`: its strings stored (the type
   * in the data chain only if the type table has no room for it,
   * `typeNumber` 0), no attempt, lease, error or worker yet. Further fields
   * are set with `setField`, and `place` places it.
   */
  newDraft(
    slot: number, num: number, type: string, typeNumber: number, typeBytes: number, payload: string, payloadBytes: number, priority: number, runAt: number,
  ): void {
    const arena = this.#m.arena;
    // Read before the look at the lock, and the word `place` moves from: a rebuild after a takeover gives every
    // free slot a new word, so a holder taken for dead from here on cannot place its job over the taker's (relies on I3).
    this.#freeWord = this.#m.slots.word(slot);
    assertHeld(this.#m.lock);
    const ref = typeNumber > 0 ? arena.store(payloadBytes, payload) : arena.store(typeBytes + payloadBytes, type, payload);
    const draft = this.#holder.mover.draft;
    // Every other field is zero: no attempt, token, lease, error (ERROR_NONE), worker, moves, own limit, result,
    // key, lease length or headers. A slot used before takes the whole record, so its draft starts at zero; a
    // never-used one is all zero already, and takes only the fields set (see `place`).
    if (this.#m.slots.jobNums[slot] !== 0) draft.fill(0);
    draft[JOB_NUM] = num;
    draft[PRIORITY] = priority;
    draft[RUN_AT] = runAt;
    draft[DATA_REF] = ref;
    draft[TYPE] = typeNumber > 0 ? typeNumber : -typeBytes;
    draft[PAYLOAD_BYTES] = payloadBytes;
    this.#newFields = NEW_JOB_FIELDS;
  }

  /** Sets one more field of the new job's draft (see `newDraft`). */
  setField(field: number, value: number): void {
    this.#holder.mover.draft[field] = value;
    if (value !== 0) this.#newFields |= fieldBit(field);
  }

  /** Stores the new job's idempotent key: its chain (the room was made) and its TTL. */
  storeKey(key: string, keyBytes: number, keyTtl: number): void {
    assertHeld(this.#m.lock);
    this.setField(KEY_REF, this.#m.arena.storeCounted(keyBytes, key));
    this.setField(KEY_BYTES, keyBytes);
    this.setField(KEY_TTL, keyTtl);
  }

  /** Stores the new job's headers (JSON text) in the arena, its room made, and points the draft at them. */
  storeHeaders(headers: string): void {
    const bytes = Buffer.byteLength(headers);
    assertHeld(this.#m.lock);
    this.setField(HEADERS_REF, this.#m.arena.storeCounted(bytes, headers));
    this.setField(HEADERS_BYTES, bytes);
  }

  /** Places the draft, a new job numbered `num`, in the free `slot` in `status`, filed in the index its status needs; its word. */
  place(slot: number, num: number, status: SlotStatus): number {
    const { slots, jobMap } = this.#m;
    const mover = this.#holder.mover;
    // A slot never used (JOB_NUM 0: job numbers start at 1) is all zero: it takes only the fields the new job
    // sets, and the columns a job leaves at zero are not even read. One used before takes the whole record.
    const fields = slots.jobNums[slot] === 0 ? this.#newFields : ALL_FIELDS;
    const next = mover.apply(slot, this.#freeWord, status, FREE, fields);
    if (next < 0) throw new LockLost();
    jobMap.set(num, slot);
    this.#fileDecided(slot, next, status);
    return next;
  }

  /**
   * Moves `slot` from `word` (status `from`) to `status` with the draft as
   * its record, notes it for the journal, and files it; false if the slot
   * moved first (a lock-free move won the race: the caller looks again).
   */
  moveTo(slot: number, word: number, status: SlotStatus, from: SlotStatus): boolean {
    const draft = this.#holder.mover.draft;
    if (this.#journaled) draft[MOVES]!++;
    this.#notes.noteOwnMove(slot, word, status);
    assertHeld(this.#m.lock);
    const next = this.#holder.mover.apply(slot, word, status, from);
    if (next < 0) return false;
    this.#fileDecided(slot, next, status);
    return true;
  }

  /**
   * Files the job the call's own move just placed or moved. That move is
   * decided (its CAS took the slot) and stands, whatever follows: a holder
   * taken for dead since its last look at the lock (stalled past the
   * timeout, before or after the CAS) files nothing — the rebuild of its
   * successor, or of the next holder (a taken-over holder's release marks
   * the hints stale), files the job from its slot — and its call goes on to
   * report the move it made. Thrown on, LockLost would make the call start
   * again, and be refused by its own move (a fail refused as stale once it
   * had failed the job) or make it twice (a submit). Keeps I13.
   */
  #fileDecided(slot: number, word: number, status: SlotStatus): void {
    try {
      this.#filing.file(slot, word, status);
    } catch (error) {
      if (!(error instanceof LockLost)) throw error;
    }
  }

  nextFinishSeq(): number {
    // The same shared counter lock-free completes take their order from.
    return this.#m.header[FINISH_BASE]! + this.#m.finishes.count();
  }

  /** A failed attempt at `failedAt`: PENDING after the backoff, or DEAD when no attempts are left (or `permanent`). False if the slot moved first. */
  /**
   * A failed attempt at `failedAt`: an expiry's leaseUntil, or (`stamped`, a
   * fail call) now, whose retry time then comes from the clock read as the
   * move is made (see `freshRunAt`).
   */
  failAttempt(slot: number, word: number, failedAt: number, errorRef: number, errorBytes: number, now: number, permanent: boolean, stamped = false): boolean {
    const draft = this.#holder.mover.start(slot);
    const attempts = draft[ATTEMPTS]!;
    const oldError = draft[ERROR_REF]!;
    draft[ERROR_REF] = errorRef;
    draft[ERROR_BYTES] = errorBytes;
    const retry = !permanent && mayRetry(attempts, attemptLimit(draft[ATTEMPT_LIMIT]!, this.#policy.maxAttempts));
    const backoff = retry ? this.#policy.backoffAfter(attempts) : 0;
    if (retry) draft[RUN_AT] = failedAt + backoff;
    const status = retry ? (draft[RUN_AT]! <= now ? READY : DELAYED) : DEAD;
    if (status === DEAD) noteFinish(draft, failedAt);
    // READY or DELAYED by the backoff alone (failedAt is now): the same with the fresh reading.
    if (retry && stamped) draft[RUN_AT] = this.freshRunAt(failedAt, backoff, draft[LEASE_UNTIL]!);
    // A finish too (see finishes.ts): counted before the move, announced after it.
    if (status === DEAD) this.#m.finishes.count();
    if (!this.moveTo(slot, word, status, RUNNING)) return false;
    if (status === DEAD) this.#m.finishes.announce();
    // Freed only after the move: a move that lost its race keeps its old error. Only the holder frees: one taken
    // over leaves the chain to its successor's rebuild, which frees every chain no slot points at.
    if (this.#m.lock.held()) this.#room.freeCounted(oldError);
    return true;
  }

  /**
   * The runAt of a job a call makes ready again (fail, release, retryDead):
   * `delay` after the clock read just before its move, so that a lock-free
   * claim of a later reading never comes before it with an older time — if
   * that reading is before `before` (the end of the lease a fail or release
   * needs: past it, the call took effect before the clock passed, at
   * `since`); else `delay` after `since`. Read before the decision, not
   * while the slot is BUSY: a holder that stalls in the clock there would be
   * taken over with its move finished, and then retry the call as refused.
   */
  freshRunAt(since: number, delay: number, before: number): number {
    // No claim of another thread to order against in an exclusive queue.
    if (this.#m.exclusive) return since + delay;
    const fresh = laterReading(this.#time, since);
    return (fresh < before ? fresh : since) + delay;
  }

  /**
   * Undoes a call's own moves whose commit failed, newest first: a submitted
   * job's slot is freed, a moved job gets its old record (and lastError)
   * back. Each undo is a move of its own, with a higher move count, and is
   * noted (lazily, see JournalNotes#noteUndone): the next commit writes the
   * job as it now is, or deletes its row, over anything a presumed-dead
   * leader may still write. The caller then rebuilds every hint from the
   * slots (counters, rings, heaps, the arena's chains).
   *
   * A move whose slot no longer holds its word is left alone (only a
   * presumed-dead holder's repairs can have moved a frozen job).
   */
  undo(moves: readonly UndoneMove[]): void {
    const { slots, awaited } = this.#m;
    for (const move of moves) {
      if (slots.word(move.slot) !== move.to) continue;
      this.#notes.noteUndone(slots.get(move.slot, JOB_NUM), move.ticket, COMMIT_MOVED);
      assertHeld(this.#m.lock);
      if (move.record === null) {
        if (this.#holder.mover.flip(move.slot, move.to, FREE, NOT_COUNTED) < 0) throw new LockLost();
      } else {
        const draft = this.#holder.mover.draft;
        const moves = slots.get(move.slot, MOVES);
        draft.set(move.record);
        if (move.lastError !== null) {
          draft[ERROR_REF] = this.#room.storeError(move.lastError);
          if (draft[ERROR_REF]! <= 0) draft[ERROR_BYTES] = 0;
        }
        draft[MOVES] = moves + 1;
        if (this.#holder.mover.apply(move.slot, move.to, move.status, NOT_COUNTED) < 0) throw new LockLost();
        if (move.leasedAt !== undefined) this.#m.rateLimits.uncounted(slots.types[move.slot]!, move.leasedAt);
      }
      awaited[move.slot] = 0;
    }
  }

  /**
   * Puts back the finished jobs an undone call evicted, oldest evicted
   * first, each only if it fits with no eviction (see UndoLog), and noted
   * new (see JournalNotes#noteUndone): the next commit inserts it whole,
   * whether or not a commit took its eviction to the journal. Whether any
   * went back; the caller then rebuilds the hints.
   */
  restoreEvicted(evictions: readonly UndoneEviction[], now: number): boolean {
    let restored = false;
    for (const { job, chunks, ticket } of evictions) {
      if (!this.#room.fitsNow(chunks)) continue;
      this.#notes.noteUndone(job.num, ticket, COMMIT_SUBMITTED);
      this.restoreJob(job, now);
      restored = true;
    }
    return restored;
  }
}

/** The fields `newDraft` sets: the least a new job's record holds. */
const NEW_JOB_FIELDS = fieldBit(JOB_NUM) | fieldBit(PRIORITY) | fieldBit(RUN_AT) | fieldBit(DATA_REF) | fieldBit(TYPE) | fieldBit(PAYLOAD_BYTES);

const STATUS_OF_NAME: Record<JobStatus, SlotStatus> = {
  PENDING: READY, RUNNING, SUCCEEDED, DEAD, CANCELLED,
};
