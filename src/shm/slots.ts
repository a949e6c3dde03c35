import {
  RECORD_FIELDS, STATUS_MASK, UNDO_RECORD, UNDO_SLOT, UNDO_WORD, nextWord, type SlotStatus,
} from './layout.js';

/**
 * The slot table: one lease word and one record per job slot. The lease words
 * are the truth of the queue; everything else is derived from them.
 *
 * A move of a slot from one state to another, by the queue-lock holder:
 *
 *   const word = slots.begin(slot);   // saves the record and word to the undo area
 *   slots.set(slot, FIELD, value)...  // edit the record
 *   slots.commit(slot, word, STATUS); // CAS of the lease word: the commit point
 *
 * A thread killed between `begin` and `commit` leaves the undo area filled and
 * the word unchanged; `recover` then puts the old record back. Killed after the
 * CAS, the word already names the new state and the record is complete.
 * Readers also hold the lock, so they never see a record mid-edit.
 */
export class SlotTable {
  readonly words: Int32Array;
  readonly records: Float64Array;
  readonly #header: Float64Array;
  readonly capacity: number;

  constructor(words: Int32Array, records: Float64Array, header: Float64Array) {
    this.words = words;
    this.records = records;
    this.#header = header;
    this.capacity = words.length;
  }

  word(slot: number): number {
    return Atomics.load(this.words, slot);
  }

  status(slot: number): SlotStatus {
    return (Atomics.load(this.words, slot) & STATUS_MASK) as SlotStatus;
  }

  get(slot: number, field: number): number {
    return this.records[slot * RECORD_FIELDS + field]!;
  }

  set(slot: number, field: number, value: number): void {
    this.records[slot * RECORD_FIELDS + field] = value;
  }

  /** Starts a move of `slot`: returns its current word, with the record saved for undo. */
  begin(slot: number): number {
    const word = Atomics.load(this.words, slot);
    const header = this.#header;
    const at = slot * RECORD_FIELDS;
    for (let f = 0; f < RECORD_FIELDS; f++) header[UNDO_RECORD + f] = this.records[at + f]!;
    header[UNDO_WORD] = word;
    // Set last: the undo area counts only once it is complete.
    header[UNDO_SLOT] = slot + 1;
    return word;
  }

  /**
   * Publishes the move: CAS of the lease word from `word` to the next version
   * with `status`. Returns the new word, or -1 if the word changed under us —
   * possible only if our lock was taken over, in which case the taker has
   * rolled our move back and the undo area is no longer ours to touch.
   */
  commit(slot: number, word: number, status: SlotStatus): number {
    const next = nextWord(word, status);
    if (Atomics.compareExchange(this.words, slot, word, next) !== word) return -1;
    this.#header[UNDO_SLOT] = 0;
    return next;
  }

  /** Rolls back a move a killed thread began and never committed. */
  recover(): void {
    const header = this.#header;
    const pending = header[UNDO_SLOT]!;
    if (pending === 0) return;
    const slot = pending - 1;
    if (Atomics.load(this.words, slot) === header[UNDO_WORD]) this.#restore(slot);
    header[UNDO_SLOT] = 0;
  }

  #restore(slot: number): void {
    const header = this.#header;
    const at = slot * RECORD_FIELDS;
    for (let f = 0; f < RECORD_FIELDS; f++) this.records[at + f] = header[UNDO_RECORD + f]!;
  }
}
