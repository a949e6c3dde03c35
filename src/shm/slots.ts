import { BUSY, RECORD_FIELDS, STATUS_MASK, type SlotStatus } from './layout.js';

/** Spins a reader waits on a BUSY word before it gives up and takes the slow path. */
const BUSY_SPINS = 64;

/**
 * The slot table: one lease word per slot (THE TRUTH) and one record of
 * float64 fields per slot. A record is written only by the thread whose
 * intent the slot's BUSY word names (see moves.ts), so a reader that sees the
 * same non-busy word before and after reading fields has read one state.
 */
export class SlotTable {
  readonly words: Int32Array;
  readonly records: Float64Array;
  readonly capacity: number;

  constructor(words: Int32Array, records: Float64Array) {
    this.words = words;
    this.records = records;
    this.capacity = words.length;
  }

  word(slot: number): number {
    // The truth, read as it is now: every decision about a slot starts here.
    return Atomics.load(this.words, slot);
  }

  status(slot: number): SlotStatus {
    return (this.word(slot) & STATUS_MASK) as SlotStatus;
  }

  /**
   * The slot's word once it is not BUSY, or BUSY if it stays busy for a few
   * spins (the owner stalled, or died: the caller takes the slow path).
   */
  settledWord(slot: number): number {
    for (let spin = 0; ; spin++) {
      // A mover holds BUSY for nanoseconds: look again rather than give up at once.
      const word = Atomics.load(this.words, slot);
      if ((word & BUSY) === 0 || spin >= BUSY_SPINS) return word;
    }
  }

  get(slot: number, field: number): number {
    return this.records[slot * RECORD_FIELDS + field]!;
  }

  /** Writes one field; only inside a move of the slot (the word BUSY, naming the caller). */
  set(slot: number, field: number, value: number): void {
    this.records[slot * RECORD_FIELDS + field] = value;
  }
}
