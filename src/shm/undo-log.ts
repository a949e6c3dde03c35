import { RECORD_FIELDS, type SlotStatus } from './layout.js';
import type { SlotTable } from './slots.js';

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
}

/**
 * What the current call of this thread must undo if its journal commit
 * fails: each of its own durable moves (submit, complete, fail, release,
 * cancel, retryDead), with the slot's record and lastError from before the move.
 * Private to the thread, cleared when a call starts.
 *
 * The undo is sound because those moves are frozen (Frozen jobs, see layout.ts)
 * until they commit: no other thread leases, evicts, cancels or retries the
 * job in the meantime, so the slot still holds the word the move made, and
 * putting the old record back loses no one else's work. Expiries that the
 * call brought up to now are not the call's own moves and are not undone
 * (any other call would have made them too); lazy moves (lease, extend,
 * eviction) stay, for the next commit to carry.
 */
export class UndoLog {
  #moves: UndoneMove[] = [];
  #recording = false;

  /** Starts a call's log: moves are recorded from `record()` on, after the call's catch-up (expiries). */
  reset(): void {
    // A new array only when there was something: most calls log nothing, and this runs on every call.
    if (this.#moves.length > 0) this.#moves = [];
    this.#recording = false;
  }

  /** From now on, the call's durable moves are its own. */
  record(): void {
    this.#recording = true;
  }

  get recording(): boolean {
    return this.#recording;
  }

  add(move: UndoneMove): void {
    this.#moves.push(move);
  }

  /** Takes the log out, newest move first (the order to undo them in), leaving it empty. */
  take(): UndoneMove[] {
    const moves = this.#moves.reverse();
    this.reset();
    return moves;
  }
}

/** A copy of a slot's published record. */
export function recordCopy(slots: SlotTable, slot: number): Float64Array {
  return slots.readInto(slot, new Float64Array(RECORD_FIELDS));
}
