import type { Arena } from './arena.js';
import * as step from '../memory/steps.js';
import { elementsIn, growTo } from '../memory/growth.js';
import { KEY_ENTRY_FIELDS, KEY_ENTRY_HASH, KEY_ENTRY_SLOT, mapEntries } from '../memory/layout.js';
import type { SlotTable } from './slots.js';
import { NOT_MAPPED } from './jobmap.js';

/**
 * Idempotent key → the slot of the job that holds it: open addressing with
 * linear probing over entries [slot + 1 | keyHash] (0: empty), sized as the job
 * map for the slots handed out so far, so at most two thirds full (a slot
 * holds at most one key). The key's
 * text is not in the entry but in the slot's KEY_REF chain, so a lookup
 * compares the hash first and decodes a key only on a hash match. Removal
 * shifts the following run back (no tombstones); the kept hash gives each
 * entry's home without reading its key.
 *
 * Concurrency contract: only the maintenance lock holder reads or writes it
 * (keyed submits, evictions, rebuilds all run under the lock), so it is
 * exact under the lock and needs no Atomics. A holder killed between a
 * job's placing and its entry leaves it wrong: the rebuild that follows any
 * takeover derives it again from the slots (see `Rebuilder#rebuild`).
 */
export class KeyMap {
  readonly #buffer: SharedArrayBuffer;
  /** This thread's view: the whole table as the buffer holds it (see #table). */
  #m: Int32Array;
  readonly #slots: SlotTable;
  readonly #arena: Arena;
  /** Entries - 1 (a power of two). */
  #mask = 0;
  #shift = 0;

  /**
   * Over `buffer`: growable, the table is as large as the buffer is. It grows
   * (doubling, rehashed) as the slots that may hold a key grow past two thirds
   * of its entries (see #roomFor), up to `mapEntries(capacity)`.
   */
  constructor(buffer: SharedArrayBuffer, slots: SlotTable, arena: Arena) {
    this.#buffer = buffer;
    this.#slots = slots;
    this.#arena = arena;
    this.#m = this.#view();
  }

  /** A view of the whole table the buffer holds now, with its mask and shift. */
  #view(): Int32Array {
    const count = elementsIn(this.#buffer, KEY_ENTRY_FIELDS * Int32Array.BYTES_PER_ELEMENT);
    this.#mask = count - 1;
    this.#shift = 32 - Math.log2(count);
    return new Int32Array(this.#buffer, 0, count * KEY_ENTRY_FIELDS);
  }

  /** This thread's view of the table as it is now: re-made if another holder grew it since (every method starts here, under the lock). */
  #table(): Int32Array {
    if (step.byteLength(this.#buffer) !== this.#m.byteLength) this.#m = this.#view();
    return this.#m;
  }

  /**
   * Makes the table large enough for `slot` to hold a key: at most two
   * thirds full with a key in every slot up to it, as `mapEntries` sizes it.
   * Grows the buffer, then files every entry afresh in the larger table.
   */
  #roomFor(slot: number): void {
    const wanted = mapEntries(slot + 1) * KEY_ENTRY_FIELDS;
    const old = this.#table();
    if (wanted <= old.length) return;
    const entries = old.slice();
    growTo(this.#buffer, Math.min(this.#buffer.maxByteLength, Math.max(wanted, 2 * old.length) * Int32Array.BYTES_PER_ELEMENT));
    const m = (this.#m = this.#view());
    m.fill(0);
    for (let at = 0; at < entries.length; at += KEY_ENTRY_FIELDS) {
      const entry = entries[at + KEY_ENTRY_SLOT]!;
      if (entry === 0) continue;
      let i = this.#home(entries[at + KEY_ENTRY_HASH]!);
      while (m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_SLOT] !== 0) i = (i + 1) & this.#mask;
      m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_SLOT] = entry;
      m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_HASH] = entries[at + KEY_ENTRY_HASH]!;
    }
  }

  /** The key the job in `slot` holds (the slot must hold a keyed job). */
  keyOf(slot: number): string {
    return this.#arena.readCounted(this.#slots.keyRefs[slot]!);
  }

  /** The slot whose entry holds `key` (its hash `hash`), or NOT_MAPPED. */
  find(key: string, hash: number): number {
    const at = this.#entryOf(key, hash);
    return at === NOT_MAPPED ? NOT_MAPPED : this.#m[at + KEY_ENTRY_SLOT]! - 1;
  }

  /** Makes `slot` the holder of `key`: its entry now, replacing an older holder's. */
  set(key: string, hash: number, slot: number): void {
    this.#roomFor(slot);
    const m = this.#m;
    const found = this.#entryOf(key, hash);
    let at = found;
    if (at < 0) {
      let i = this.#home(hash);
      // Never full: there are more entries than slots.
      while (m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_SLOT] !== 0) i = (i + 1) & this.#mask;
      at = i * KEY_ENTRY_FIELDS;
      m[at + KEY_ENTRY_HASH] = hash;
    }
    m[at + KEY_ENTRY_SLOT] = slot + 1;
  }

  /** As `set`, unless the key's current holder is a newer job (for a rebuild, which meets the slots in any order). */
  setIfNewer(key: string, hash: number, slot: number): void {
    const holder = this.find(key, hash);
    if (holder < 0 || this.#slots.jobNums[holder]! < this.#slots.jobNums[slot]!) this.set(key, hash, slot);
  }

  /** Removes the entry of `slot` for `key`, if `slot` still holds it (a newer job with the key may). */
  delete(key: string, hash: number, slot: number): void {
    const m = this.#table();
    const mask = this.#mask;
    const found = this.#entryOf(key, hash);
    if (found < 0 || m[found + KEY_ENTRY_SLOT] !== slot + 1) return;
    let hole = found / KEY_ENTRY_FIELDS;
    // Backward shift: pull later entries of the run into the hole when their home allows it.
    for (let i = (hole + 1) & mask; m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_SLOT] !== 0; i = (i + 1) & mask) {
      const home = this.#home(m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_HASH]!);
      const fits = hole <= i ? home <= hole || home > i : home <= hole && home > i;
      if (fits) {
        m[hole * KEY_ENTRY_FIELDS + KEY_ENTRY_SLOT] = m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_SLOT]!;
        m[hole * KEY_ENTRY_FIELDS + KEY_ENTRY_HASH] = m[i * KEY_ENTRY_FIELDS + KEY_ENTRY_HASH]!;
        hole = i;
      }
    }
    m[hole * KEY_ENTRY_FIELDS + KEY_ENTRY_SLOT] = 0;
    m[hole * KEY_ENTRY_FIELDS + KEY_ENTRY_HASH] = 0;
  }

  clear(): void {
    this.#table().fill(0);
  }

  /** The index in the table of `key`'s entry, or NOT_MAPPED. */
  #entryOf(key: string, hash: number): number {
    const m = this.#table();
    for (let i = this.#home(hash); ; i = (i + 1) & this.#mask) {
      const at = i * KEY_ENTRY_FIELDS;
      const entry = m[at + KEY_ENTRY_SLOT]!;
      if (entry === 0) return NOT_MAPPED;
      if (m[at + KEY_ENTRY_HASH] === hash && this.keyOf(entry - 1) === key) return at;
    }
  }

  #home(hash: number): number {
    // Fibonacci hashing: the top bits of the product are the best mixed.
    return (Math.imul(hash, 0x9e3779b1) >>> this.#shift) & this.#mask;
  }
}
