import * as step from '../memory/steps.js';
import {
  ALL_FIELDS, INTENT_FROM, INTENT_MASK, INTENT_RECORD, INTENT_SLOT, INTENT_TO, RECORD_FIELDS, ROW_DATA, ROW_INTENT_SEQ, ROW_WORDS,
  RUNNING, busyWord, nextWord, type SlotStatus,
} from '../memory/layout.js';
import type { QueueMemory } from '../queue-memory.js';
import type { RowTable } from '../tables/rows.js';
import type { SlotTable } from '../tables/slots.js';

/** The `counted` of a move that leaves a job in its status (an extend, an undo, a rebuild's renewal): no count changes. */
export const NOT_COUNTED = -1;

/** What `apply` and `flip` return when the slot no longer held the word the mover read: another thread moved it first. */
export const MOVE_LOST = -1;

/**
 * One row's way of moving a slot (see the lease-word legend in layout.ts):
 *
 *   1. the new record's fields in the draft (the row's intent record): `start(slot)` copies the slot's whole
 *      record there for the caller to edit; a claim, complete or extend reads and sets only its few fields
 *      (read while the slot holds the word `from` the caller read: the CAS below proves nothing moved since);
 *   2. `apply(slot, from, status, counted, mask)`: intent written (slot, from, to, the mask of fields the move
 *      sets), CAS `from → BUSY(row, seq)` — the decision — then the masked fields copied in and CAS `BUSY → to`.
 *
 * A thread killed between the CASes leaves BUSY naming its intent, which
 * holds every field the move sets: the helping protocol (helping.ts) finishes
 * the move from it. Nothing but the row's owner writes the intent.
 *
 * An exclusive queue (I23) has no other thread to race or to
 * help: its moves write the record and then the word, with no intent.
 */
export class Mover {
  readonly row: number;
  readonly #memory: QueueMemory;
  readonly #slots: SlotTable;
  readonly #rows: RowTable;
  /** The row's intent record: the new record of the slot being moved. */
  readonly draft: Float64Array;
  readonly #intent: Float64Array;
  readonly #seqAt: number;

  constructor(memory: QueueMemory, row: number) {
    const rows = memory.rows;
    this.row = row;
    this.#memory = memory;
    this.#slots = memory.slots;
    this.#rows = rows;
    this.#intent = rows.data.subarray(row * ROW_DATA, (row + 1) * ROW_DATA);
    this.draft = this.#intent.subarray(INTENT_RECORD, INTENT_RECORD + RECORD_FIELDS);
    this.#seqAt = row * ROW_WORDS + ROW_INTENT_SEQ;
  }

  /** Copies the slot's record into the draft; returns the draft. */
  start(slot: number): Float64Array {
    return this.#slots.readInto(slot, this.draft);
  }

  /**
   * Makes the move from the word `from` to the next word of `status`, with
   * the draft's fields that `mask` names (fieldBit of each; all by default)
   * as the new record's, and counts it in this row (out of `counted`, the
   * status it leaves, into `status`; no count for NOT_COUNTED). Returns the new word,
   * or MOVE_LOST if the slot no longer holds `from` (another thread moved it first:
   * nothing was written).
   */
  apply(slot: number, from: number, status: SlotStatus, counted: number, mask = ALL_FIELDS): number {
    const words = this.#slots.words;
    const to = nextWord(from, status);
    if (this.#memory.exclusive) return this.#applyAlone(slot, from, to, status, counted, mask);
    const intent = this.#intent;
    intent[INTENT_SLOT] = slot;
    intent[INTENT_FROM] = from;
    intent[INTENT_TO] = to;
    intent[INTENT_MASK] = mask;
    const rowWords = this.#rows.words;
    const seq = rowWords[this.#seqAt]! + 1;
    // Names the intent the BUSY word will point at; published by the CAS below.
    step.store(rowWords, this.#seqAt, seq);
    const busy = busyWord(this.row, seq);
    // The decision (keeps I2; the linearization point): the slot is ours to move only if it still holds `from`.
    if (step.compareExchange(words, slot, from, busy) !== from) return MOVE_LOST;
    this.#slots.write(slot, this.draft, mask);
    // Still ours (not finished by a helper that took us for dead, whose rebuild counted it): count it here.
    if (step.load(words, slot) === busy) this.#count(slot, counted, status);
    // Publishes the record with the new word. Refused only if a helper finished this very move (we were
    // presumed dead): it wrote the same record, so the move stands either way.
    step.compareExchange(words, slot, busy, to);
    return to;
  }

  /** `apply` in an exclusive queue: nobody else reads the slot, so the record and then the word are simply written. */
  #applyAlone(slot: number, from: number, to: number, status: SlotStatus, counted: number, mask: number): number {
    const words = this.#slots.words;
    if (words[slot] !== from) return MOVE_LOST;
    this.#slots.write(slot, this.draft, mask);
    this.#count(slot, counted, status);
    words[slot] = to;
    return to;
  }

  /** A move that changes no field (promote, evict), counted as `apply` does: one CAS. Returns the new word, or MOVE_LOST if the slot moved first. */
  flip(slot: number, from: number, status: SlotStatus, counted: number): number {
    const to = nextWord(from, status);
    // The whole move: no field changes, so there is nothing to publish but the word.
    if (step.compareExchange(this.#slots.words, slot, from, to) !== from) return MOVE_LOST;
    this.#count(slot, counted, status);
    return to;
  }

  /**
   * Counts a move in this row: out of `counted` (NOT_COUNTED: none, the job
   * stays in its status) into `status`; and, while a concurrency cap is set,
   * a move into or out of RUNNING in the RUNNING counts of the caps (after
   * the CAS that decided it: a count never falls below the jobs RUNNING,
   * keeps I25, see concurrency.ts). No cap: one Atomics load, on those moves only.
   */
  #count(slot: number, counted: number, status: SlotStatus): void {
    if (counted < 0) return;
    this.#rows.count(this.row, counted, -1);
    this.#rows.count(this.row, status, 1);
    if ((counted === RUNNING) !== (status === RUNNING) && this.#memory.concurrency.active) {
      this.#memory.concurrency.moved(this.#slots.types[slot]!, this.#slots.groups[slot]!, status === RUNNING ? 1 : -1);
      // A place under a cap is free: workers asleep in waitForWork after a poll the cap held back look again.
      if (status !== RUNNING) this.#memory.signal.bump();
    }
  }
}

/**
 * Where the lock holder's parts find the mover its moves use now: it changes
 * as the instance takes a row of its own, or trades a revoked one for a new
 * one (see QueueContext), so they read it at each move rather than keep one.
 */
export interface MoverHolder {
  readonly mover: Mover;
}
