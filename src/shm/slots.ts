import {
  FREE, MOVES, RECORD_FIELDS, STATUS_MASK, UNDO_RECORD, UNDO_SLOT, UNDO_WORD, nextWord, type SlotStatus,
} from './layout.js';

/**
 * The slot table: one lease word and one record per job slot. The lease words
 * are the truth of the queue; everything else is derived from them.
 *
 * A move of a slot from one state to another, by the queue-lock holder:
 *
 *   const word = slots.begin(slot);   // stage a private copy of the record
 *   slots.set(slot, FIELD, value)...  // edit the staged copy
 *   slots.commit(slot, word, STATUS); // undo, publish the record, CAS the lease word
 *
 * Edits go to a thread-private stage, so a holder that stalls mid-move and is
 * taken for dead has written nothing shared; `commit` publishes the record in
 * one short burst. It first saves the old record and word to the undo area: a
 * thread killed during the burst leaves the undo area filled and the word
 * unchanged, and `recover` puts the old record back. Killed after the CAS, the
 * word already names the new state and the record is complete. Readers also
 * hold the lock, so they never see a record mid-edit.
 */
export class SlotTable {
  readonly words: Int32Array;
  readonly records: Float64Array;
  readonly #header: Float64Array;
  readonly capacity: number;
  readonly #stage = new Float64Array(RECORD_FIELDS);
  #staged = -1;

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

  /** A field of the slot's record; during a move of this slot, the staged value. */
  get(slot: number, field: number): number {
    return slot === this.#staged ? this.#stage[field]! : this.records[slot * RECORD_FIELDS + field]!;
  }

  /** Edits a field of the slot being moved (after `begin`). */
  set(slot: number, field: number, value: number): void {
    if (slot !== this.#staged) throw new Error(`slot ${slot} is not being moved`);
    this.#stage[field] = value;
  }

  /** Writes a hint field (WHERE) in place, outside any move. */
  setHint(slot: number, field: number, value: number): void {
    this.records[slot * RECORD_FIELDS + field] = value;
  }

  /** Starts a move of `slot`: stages its record and returns its current lease word. */
  begin(slot: number): number {
    const at = slot * RECORD_FIELDS;
    for (let f = 0; f < RECORD_FIELDS; f++) this.#stage[f] = this.records[at + f]!;
    this.#staged = slot;
    return Atomics.load(this.words, slot);
  }

  /** Drops a staged move that will never be committed (its call failed before the commit): reads see the record again. */
  abandon(): void {
    this.#staged = -1;
  }

  /**
   * Publishes the move: saves the undo record, writes the staged record, and
   * CASes the lease word from `word` to the next version with `status`.
   * Returns the new word, or -1 if the word changed under us — possible only
   * if our lock was taken over after the caller checked it.
   */
  commit(slot: number, word: number, status: SlotStatus): number {
    const header = this.#header;
    const at = slot * RECORD_FIELDS;
    this.#staged = -1;
    const records = this.records;
    const stage = this.#stage;
    stage[MOVES]!++;
    // A FREE slot's record means nothing: there is nothing to undo.
    const undo = (word & STATUS_MASK) !== FREE;
    if (undo) {
      for (let f = 0; f < RECORD_FIELDS; f++) header[UNDO_RECORD + f] = records[at + f]!;
      header[UNDO_WORD] = word;
      // Set last: the undo area counts only once it is complete.
      header[UNDO_SLOT] = slot + 1;
    }
    for (let f = 0; f < RECORD_FIELDS; f++) records[at + f] = stage[f]!;
    const next = nextWord(word, status);
    if (Atomics.compareExchange(this.words, slot, word, next) !== word) return -1;
    if (undo) header[UNDO_SLOT] = 0;
    return next;
  }

  /**
   * Frees a slot: CAS of its lease word from `word` to FREE, record untouched
   * (a FREE record means nothing, so there is nothing to stage or undo).
   * Returns the new word, or -1 if the word changed under us.
   */
  release(slot: number, word: number): number {
    const next = nextWord(word, FREE);
    return Atomics.compareExchange(this.words, slot, word, next) === word ? next : -1;
  }

  /** Rolls back a move a killed thread was publishing and never committed. */
  recover(): void {
    const header = this.#header;
    const pending = header[UNDO_SLOT]!;
    if (pending === 0) return;
    const slot = pending - 1;
    if (Atomics.load(this.words, slot) === header[UNDO_WORD]) {
      const at = slot * RECORD_FIELDS;
      for (let f = 0; f < RECORD_FIELDS; f++) this.records[at + f] = header[UNDO_RECORD + f]!;
    }
    header[UNDO_SLOT] = 0;
  }
}
