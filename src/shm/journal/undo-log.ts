import { RECORD_FIELDS, type SlotStatus } from '../memory/layout.js';
import type { LoggedJob } from './movelog.js';
import type { SlotTable } from '../tables/slots.js';

/** One move of the current call, as it can be undone. */
export interface UndoneMove {
  slot: number;
  /** The job's status before the move (FREE for a submit). */
  status: SlotStatus;
  /** The lease word the move made: the undo happens only if the slot still holds it. */
  to: number;
  /** The record before the move; null for a submit (the slot was FREE). */
  record: Float64Array | null;
  /** The lastError before the move, decoded: its arena chain may be freed by the move. */
  lastError: string | null;
  /** The move's commit ticket (see JournalNotes#noteUndone). */
  ticket: number;
  /** A lease's time, the call's: undone, the lease is taken off its type's rate-limit window of then (see RateLimits#uncounted). */
  leasedAt?: number;
  /** An edit of the job's content (moves/edit.ts): its data chain's bytes before the move (type, if in the chain, then payload, text or binary), which the move freed. */
  data?: Uint8Array;
}

/** A finished job the current call evicted to make room for its own move: the job whole, and the arena chunks it held. */
export interface UndoneEviction {
  job: LoggedJob;
  chunks: number;
  /** The eviction's commit ticket (see JournalNotes#noteUndone). */
  ticket: number;
}

/** What a call whose commit failed puts back: its own moves, newest first, and the jobs it evicted, oldest evicted first. */
export interface Undo {
  moves: readonly UndoneMove[];
  evictions: readonly UndoneEviction[];
}

/** The undo of a call that made no move of its own. */
export const NOTHING_TO_UNDO: Undo = { moves: [], evictions: [] };

/**
 * What the current call of this thread must undo if its journal commit
 * fails: each of its own durable moves (submit, complete, fail, release,
 * cancel, retryDead), with the slot's record and lastError from before the move;
 * and the finished jobs it evicted to make room for them (a submit's, a
 * result's, an error's), whole, to be put back. Private to the thread,
 * cleared when a call starts.
 *
 * The undo is sound because those moves are frozen (relies on I21)
 * until they commit: no other thread leases, evicts, cancels or retries the
 * job in the meantime, so the slot still holds the word the move made, and
 * putting the old record back loses no one else's work. Expiries that the
 * call brought up to now are not the call's own moves and are not undone
 * (any other call would have made them too), nor are the evictions of the
 * `retain` option there; lazy moves (lease, extend) stay, for the next
 * commit to carry, but for one made after a durable move of the call's own
 * (a locked completeAndPoll's lease), which is undone with it. An evicted
 * job goes back once the moves are undone, if it still fits without
 * evicting another (another thread's call may have taken the room since):
 * else its eviction stands, as a later call's would.
 */
export class UndoLog {
  #moves: UndoneMove[] = [];
  #evictions: UndoneEviction[] = [];
  #recording = false;

  /** Starts a call's log: moves are recorded from `record()` on, after the call's catch-up (expiries). */
  reset(): void {
    // New arrays only when there was something: most calls log nothing, and this runs on every call.
    if (this.#moves.length > 0) this.#moves = [];
    if (this.#evictions.length > 0) this.#evictions = [];
    this.#recording = false;
  }

  /** From now on, the call's durable moves are its own. */
  record(): void {
    this.#recording = true;
  }

  get recording(): boolean {
    return this.#recording;
  }

  /** Whether the call made a durable move of its own so far (a lazy move after one is undone with it). */
  get holdsMoves(): boolean {
    return this.#moves.length > 0;
  }

  add(move: UndoneMove): void {
    this.#moves.push(move);
  }

  /** The move logged last, if any. */
  lastMove(): UndoneMove | undefined {
    return this.#moves.at(-1);
  }

  addEviction(eviction: UndoneEviction): void {
    this.#evictions.push(eviction);
  }

  /** Takes the log out, newest move first (the order to undo them in), leaving it empty. */
  take(): Undo {
    const undo = this.#moves.length === 0 && this.#evictions.length === 0 ? NOTHING_TO_UNDO : { moves: this.#moves.reverse(), evictions: this.#evictions };
    this.reset();
    return undo;
  }
}

/** A copy of a slot's published record. */
export function recordCopy(slots: SlotTable, slot: number): Float64Array {
  return slots.readInto(slot, new Float64Array(RECORD_FIELDS));
}
