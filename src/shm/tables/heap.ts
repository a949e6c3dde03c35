import { elementsIn, growDoubling } from '../memory/growth.js';
import { ENTRY_FIELDS, ENTRY_K1, ENTRY_K2, ENTRY_K3, ENTRY_SLOT, ENTRY_WORD, INITIAL_HEAP_ENTRIES } from '../memory/layout.js';
import { compareEntry, copyEntry, writeEntry } from '../memory/entries.js';

const ARITY = 4;

/**
 * A 4-ary min-heap of entries (K1, K2, K3, SLOT, WORD) in shared memory,
 * ordered by (K1, K2, K3). Four children share two cache lines, so a heap of
 * a million entries is ten levels deep and costs about one miss per level.
 *
 * Entries are hints: removal is lazy. A job that leaves the state an entry was
 * made for simply makes the entry stale (its WORD no longer matches the slot);
 * stale entries are dropped when they reach the top, or all at once by
 * `compact` when the heap fills up. Only the queue-lock holder touches a heap.
 */
export class SharedHeap {
  readonly #buffer: SharedArrayBuffer;
  /** This thread's view of the entries: fixed-length, re-made when the heap's size passes it (see growth.ts). */
  #e: Float64Array;
  readonly #header: Float64Array;
  readonly #sizeField: number;
  readonly #maxEntries: number;

  /** Over `buffer` (growable: it grows as entries are pushed, up to its maxByteLength), sized by header field `sizeField`. */
  constructor(buffer: SharedArrayBuffer, header: Float64Array, sizeField: number) {
    this.#buffer = buffer;
    this.#e = SharedHeap.#view(buffer);
    this.#header = header;
    this.#sizeField = sizeField;
    this.#maxEntries = Math.floor(buffer.maxByteLength / (ENTRY_FIELDS * Float64Array.BYTES_PER_ELEMENT));
  }

  static #view(buffer: SharedArrayBuffer): Float64Array {
    return new Float64Array(buffer, 0, elementsIn(buffer, ENTRY_FIELDS * Float64Array.BYTES_PER_ELEMENT) * ENTRY_FIELDS);
  }

  /** Entries this thread's view holds: the heap's size must not pass it before a call reads the entries. */
  get #viewEntries(): number {
    return this.#e.length / ENTRY_FIELDS;
  }

  /**
   * The size, with this thread's view made to cover it: another lock holder
   * may have grown the heap since this thread last looked (it grew the buffer
   * before it wrote the size, so the bytes are there).
   */
  get size(): number {
    const size = this.#header[this.#sizeField]!;
    if (size > this.#viewEntries) this.#e = SharedHeap.#view(this.#buffer);
    return size;
  }

  get full(): boolean {
    return this.size >= this.#maxEntries;
  }

  /** Field `field` (ENTRY_*) of the top entry; only when size > 0. */
  top(field: number): number {
    // Entry 0 is in every view: a heap's buffer starts with room for its first entries.
    return this.#e[field]!;
  }

  push(k1: number, k2: number, k3: number, slot: number, word: number): void {
    const size = this.size;
    // Room for one more before the size that counts it is written.
    if (size >= this.#viewEntries) this.#grow(size + 1);
    let i = size;
    // Sift up: move parents down until the new entry's place is found.
    while (i > 0) {
      const parent = Math.floor((i - 1) / ARITY);
      if (compareEntry(this.#e, parent, k1, k2, k3) <= 0) break;
      copyEntry(this.#e, parent, i);
      i = parent;
    }
    writeEntry(this.#e, i, k1, k2, k3, slot, word);
    this.#header[this.#sizeField] = size + 1;
  }

  /** Grows the buffer to hold `entries` (at least INITIAL_HEAP_ENTRIES, doubling) and re-makes this thread's view. */
  #grow(entries: number): void {
    const bytesPerEntry = ENTRY_FIELDS * Float64Array.BYTES_PER_ELEMENT;
    growDoubling(this.#buffer, entries * bytesPerEntry, INITIAL_HEAP_ENTRIES * bytesPerEntry);
    this.#e = SharedHeap.#view(this.#buffer);
  }

  pop(): void {
    const size = this.size - 1;
    this.#header[this.#sizeField] = size;
    if (size > 0) this.#siftDown(size, 0, size);
  }

  clear(): void {
    this.#header[this.#sizeField] = 0;
  }

  /** Calls `visit` with every entry's (K1, K2, K3, SLOT, WORD), in no particular order: O(n). */
  forEach(visit: (k1: number, k2: number, k3: number, slot: number, word: number) => void): void {
    const size = this.size;
    const e = this.#e;
    for (let at = 0; at < size * ENTRY_FIELDS; at += ENTRY_FIELDS) visit(e[at + ENTRY_K1]!, e[at + ENTRY_K2]!, e[at + ENTRY_K3]!, e[at + ENTRY_SLOT]!, e[at + ENTRY_WORD]!);
  }

  /** Drops every entry for which `keep` is false, then restores heap order in O(n). */
  compact(keep: (slot: number, word: number) => boolean): void {
    const size = this.size;
    const e = this.#e;
    let kept = 0;
    for (let i = 0; i < size; i++) {
      const at = i * ENTRY_FIELDS;
      if (keep(e[at + ENTRY_SLOT]!, e[at + ENTRY_WORD]!)) copyEntry(this.#e, i, kept++);
    }
    this.#header[this.#sizeField] = kept;
    for (let i = Math.floor((kept - 2) / ARITY); i >= 0; i--) this.#siftDown(i, i, kept);
  }

  /** Places entry `from` at position `hole` and sifts it down within `size` entries. */
  #siftDown(from: number, hole: number, size: number): void {
    const e = this.#e;
    const f = from * ENTRY_FIELDS;
    const k1 = e[f + ENTRY_K1]!, k2 = e[f + ENTRY_K2]!, k3 = e[f + ENTRY_K3]!;
    const slot = e[f + ENTRY_SLOT]!, word = e[f + ENTRY_WORD]!;
    let i = hole;
    for (;;) {
      const first = i * ARITY + 1;
      if (first >= size) break;
      let best = first;
      const last = Math.min(first + ARITY, size);
      for (let c = first + 1; c < last; c++) if (this.#lessAt(c, best)) best = c;
      if (compareEntry(this.#e, best, k1, k2, k3) >= 0) break;
      copyEntry(this.#e, best, i);
      i = best;
    }
    writeEntry(this.#e, i, k1, k2, k3, slot, word);
  }

  #lessAt(i: number, j: number): boolean {
    const e = this.#e;
    const at = j * ENTRY_FIELDS;
    return compareEntry(this.#e, i, e[at + ENTRY_K1]!, e[at + ENTRY_K2]!, e[at + ENTRY_K3]!) < 0;
  }
}
