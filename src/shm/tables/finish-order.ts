import * as step from '../memory/steps.js';
import { elementsIn, growDoubling } from '../memory/growth.js';
import { ENTRY_FIELDS, ENTRY_K1, ENTRY_K2, ENTRY_K3, ENTRY_SLOT, ENTRY_WORD, INITIAL_HEAP_ENTRIES } from '../memory/layout.js';
import { compareEntry, copyEntry, writeEntry } from '../memory/entries.js';

const ENTRY_BYTES = ENTRY_FIELDS * Float64Array.BYTES_PER_ELEMENT;

/** Where entries are filed under the lock, in an order of their keys: a heap, or the finished jobs' ring. */
export interface EntryOrder {
  readonly full: boolean;
  push(k1: number, k2: number, k3: number, slot: number, word: number): void;
  /** Drops every entry for which `keep` is false. */
  compact(keep: (slot: number, word: number) => boolean): void;
}

/**
 * The eviction order of finished jobs: entries (K1 FINISH_SEQ, K2 when it
 * finished, K3, SLOT, WORD) in shared memory, sorted by (K1, K2, K3) in a
 * ring that starts at the header's `headField` and holds `sizeField` entries.
 *
 * Jobs finish in the order of their FINISH_SEQ, and are filed in about that
 * order, so an entry almost always goes at the end (or, put back, at the
 * front): filing and taking the oldest cost O(1), and the oldest entries sit
 * side by side, where a heap would sift through scattered levels at every
 * eviction. An entry that comes out of order (the rows' rings drained one
 * after the other, a finish filed under the lock before a lock-free one
 * drained) is inserted in its place, moving the entries of its shorter side;
 * a bulk of entries in no order (a rebuild) is filed with `append` and then
 * put in order once (`sortedEntries`, `refill`).
 *
 * Entries are hints, as the heaps' are: one whose WORD the slot no longer
 * holds is stale, dropped when it reaches the front or by `compact`. Only the
 * queue-lock holder touches the order.
 */
export class FinishOrder implements EntryOrder {
  readonly #buffer: SharedArrayBuffer;
  /** This thread's view of the ring: the whole buffer as it is (see #sync). */
  #e: Float64Array;
  readonly #header: Float64Array;
  readonly #sizeField: number;
  readonly #headField: number;
  /** Entries of the ring now: its modulus, the buffer's length (it grows, see #grow). */
  #maxEntries = 0;
  /** Entries the ring may grow to. */
  readonly #capacity: number;

  /**
   * Over `buffer`: growable, the ring is as long as the buffer is, and grows
   * (doubling, from INITIAL_HEAP_ENTRIES) as entries come, up to the
   * buffer's maxByteLength.
   */
  constructor(buffer: SharedArrayBuffer, header: Float64Array, sizeField: number, headField: number) {
    this.#buffer = buffer;
    this.#header = header;
    this.#sizeField = sizeField;
    this.#headField = headField;
    this.#capacity = Math.floor(buffer.maxByteLength / ENTRY_BYTES);
    this.#e = this.#view();
  }

  #view(): Float64Array {
    this.#maxEntries = elementsIn(this.#buffer, ENTRY_BYTES);
    return new Float64Array(this.#buffer, 0, this.#maxEntries * ENTRY_FIELDS);
  }

  /** Re-makes this thread's view if another holder grew the ring since: every look at the entries starts here (the ring's modulus is its length). */
  #sync(): void {
    if (step.byteLength(this.#buffer) !== this.#e.byteLength) this.#e = this.#view();
  }

  /**
   * Grows the ring to hold one more entry than `size`, under the lock: the
   * buffer first, then the entries that wrapped past the old end are moved
   * to just after it, so that the ring reads the same from its head with the
   * new modulus.
   */
  #grow(size: number): void {
    const old = this.#maxEntries;
    const head = this.#head();
    growDoubling(this.#buffer, (size + 1) * ENTRY_BYTES, INITIAL_HEAP_ENTRIES * ENTRY_BYTES);
    const e = (this.#e = this.#view());
    const wrapped = head + size - old;
    if (wrapped > 0) e.copyWithin(old * ENTRY_FIELDS, 0, wrapped * ENTRY_FIELDS);
  }

  get size(): number {
    this.#sync();
    return this.#header[this.#sizeField]!;
  }

  get full(): boolean {
    return this.size >= this.#capacity;
  }

  /** Field `field` (ENTRY_*) of the first entry; only when size > 0. */
  top(field: number): number {
    this.#sync();
    return this.#e[this.#head() * ENTRY_FIELDS + field]!;
  }

  /**
   * Drops the first entry; only when size > 0, after `top` (which brought
   * this thread's view up to date). No step of the seam: a holder that looked
   * at the lock just before writes here with no other thread's move between.
   */
  pop(): void {
    const header = this.#header;
    header[this.#headField] = this.#at(1);
    header[this.#sizeField] = header[this.#sizeField]! - 1;
  }

  clear(): void {
    this.#header[this.#sizeField] = 0;
    this.#header[this.#headField] = 0;
  }

  /** Files an entry in its place; the caller compacted a full order first. */
  push(k1: number, k2: number, k3: number, slot: number, word: number): void {
    const size = this.size;
    if (size >= this.#maxEntries) this.#grow(size);
    // The common case: no entry is later.
    if (size === 0 || compareEntry(this.#e, this.#at(size - 1), k1, k2, k3) <= 0) return this.append(k1, k2, k3, slot, word);
    if (compareEntry(this.#e, this.#at(0), k1, k2, k3) >= 0) {
      // Before every entry: a job put back at the front.
      const head = this.#at(-1);
      this.#header[this.#headField] = head;
      writeEntry(this.#e, head, k1, k2, k3, slot, word);
      this.#header[this.#sizeField] = size + 1;
      return;
    }
    // Out of order: the first entry later than this one, by bisection (0 is not, size - 1 is).
    let low = 0;
    let high = size - 1;
    while (high - low > 1) {
      const mid = (low + high) >>> 1;
      if (compareEntry(this.#e, this.#at(mid), k1, k2, k3) <= 0) low = mid;
      else high = mid;
    }
    if (high <= size - high) {
      // Fewer entries before it: they move one place towards the front.
      const head = this.#at(-1);
      const hole = this.#at(high - 1);
      for (let i = 0; i < high; i++) copyEntry(this.#e, this.#at(i), this.#at(i - 1));
      this.#header[this.#headField] = head;
      writeEntry(this.#e, hole, k1, k2, k3, slot, word);
    } else {
      for (let i = size - 1; i >= high; i--) copyEntry(this.#e, this.#at(i), this.#at(i + 1));
      writeEntry(this.#e, this.#at(high), k1, k2, k3, slot, word);
    }
    this.#header[this.#sizeField] = size + 1;
  }

  /** Files an entry at the end, in whatever order: a bulk of them is put in order (`sortedEntries`) before the next look at the front. */
  append(k1: number, k2: number, k3: number, slot: number, word: number): void {
    const size = this.size;
    if (size >= this.#maxEntries) this.#grow(size);
    writeEntry(this.#e, this.#at(size), k1, k2, k3, slot, word);
    this.#header[this.#sizeField] = size + 1;
  }

  /**
   * Every entry, in order (after `append`s in no order), O(n log n): a copy
   * in this thread's memory, for `refill` to write back. In two steps, so
   * that the holder can look at the lock between them: a holder taken over
   * while it sorted must not write over its successor's order.
   */
  sortedEntries(): Float64Array {
    const size = this.size;
    let from = new Float64Array(size * ENTRY_FIELDS);
    for (let i = 0; i < size; i++) this.#copyOut(i, from, i * ENTRY_FIELDS);
    // A bottom-up merge sort: its passes read and write the entries in sequence, where a heap sort of a million
    // entries would miss the cache at every level.
    let to = new Float64Array(size * ENTRY_FIELDS);
    for (let width = 1; width < size; width *= 2) {
      for (let start = 0; start < size; start += 2 * width) mergeRuns(from, to, start, Math.min(start + width, size), Math.min(start + 2 * width, size));
      [from, to] = [to, from];
    }
    return from;
  }

  /** Makes the order hold `entries` (from `sortedEntries`), and only them. */
  refill(entries: Float64Array): void {
    this.#sync();
    this.#e.set(entries, 0);
    this.#header[this.#headField] = 0;
    this.#header[this.#sizeField] = entries.length / ENTRY_FIELDS;
  }

  /** Drops every entry for which `keep` is false; the others keep their order. */
  compact(keep: (slot: number, word: number) => boolean): void {
    this.#sync();
    const e = this.#e;
    let kept = 0;
    for (let i = 0, size = this.size; i < size; i++) {
      const at = this.#at(i) * ENTRY_FIELDS;
      if (keep(e[at + ENTRY_SLOT]!, e[at + ENTRY_WORD]!)) copyEntry(this.#e, this.#at(i), this.#at(kept++));
    }
    this.#header[this.#sizeField] = kept;
  }

  #head(): number {
    return this.#header[this.#headField]!;
  }

  /** Where the entry `i` places after the first one is (i may be -1, or size: one before, one past). */
  #at(i: number): number {
    const at = this.#head() + i;
    return at < 0 ? at + this.#maxEntries : at >= this.#maxEntries ? at - this.#maxEntries : at;
  }

  /** Copies entry `i` of the order to `into` at `at`. */
  #copyOut(i: number, into: Float64Array, at: number): void {
    const from = this.#at(i) * ENTRY_FIELDS;
    for (let field = 0; field < ENTRY_FIELDS; field++) into[at + field] = this.#e[from + field]!;
  }
}

/** Whether entry i of `e` comes after entry j in (K1, K2, K3) order. */
function after(e: Float64Array, i: number, j: number): boolean {
  const a = i * ENTRY_FIELDS;
  const b = j * ENTRY_FIELDS;
  if (e[a + ENTRY_K1] !== e[b + ENTRY_K1]) return e[a + ENTRY_K1]! > e[b + ENTRY_K1]!;
  if (e[a + ENTRY_K2] !== e[b + ENTRY_K2]) return e[a + ENTRY_K2]! > e[b + ENTRY_K2]!;
  return e[a + ENTRY_K3]! > e[b + ENTRY_K3]!;
}

/** Merges the sorted runs [start, middle) and [middle, end) of `from` into the same places of `to`; ties keep their order. */
function mergeRuns(from: Float64Array, to: Float64Array, start: number, middle: number, end: number): void {
  let left = start;
  let right = middle;
  for (let out = start * ENTRY_FIELDS; out < end * ENTRY_FIELDS; out += ENTRY_FIELDS) {
    const take = right >= end || (left < middle && !after(from, left, right)) ? left++ : right++;
    for (let field = 0, at = take * ENTRY_FIELDS; field < ENTRY_FIELDS; field++) to[out + field] = from[at + field]!;
  }
}
