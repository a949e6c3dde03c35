import { MAP_FIELDS, MAP_KEY, MAP_SLOT } from './layout.js';

/**
 * Job number → slot, an open-addressing table with linear probing, at most
 * half full. Removal shifts the following run back instead of leaving
 * tombstones, so the table never degrades. Job numbers are scattered by a
 * multiplicative hash: taken plainly, sequential numbers would form one long
 * run, and every removal would walk it to its end. Only the queue-lock holder
 * touches it; it is a hint, rebuilt from the slot records after a crash.
 */
export class JobMap {
  readonly #m: Float64Array;
  readonly #mask: number;
  readonly #shift: number;

  constructor(entries: Float64Array) {
    this.#m = entries;
    const size = entries.length / MAP_FIELDS;
    this.#mask = size - 1;
    // Take the hash's top bits: they are the best mixed.
    this.#shift = 32 - Math.log2(size);
  }

  /** The slot of job `n`, or -1. */
  get(n: number): number {
    const m = this.#m;
    // Bounded by the table size: a hint is never trusted to hold an empty entry.
    for (let i = this.#home(n), probes = 0; probes <= this.#mask; i = (i + 1) & this.#mask, probes++) {
      const key = m[i * MAP_FIELDS + MAP_KEY]!;
      if (key === n) return m[i * MAP_FIELDS + MAP_SLOT]!;
      if (key === 0) return -1;
    }
    return -1;
  }

  set(n: number, slot: number): void {
    const m = this.#m;
    let i = this.#home(n);
    for (let probes = 0; m[i * MAP_FIELDS + MAP_KEY] !== 0 && m[i * MAP_FIELDS + MAP_KEY] !== n; probes++) {
      if (probes > this.#mask) return; // full of garbage: the lookup falls back to the slots
      i = (i + 1) & this.#mask;
    }
    m[i * MAP_FIELDS + MAP_KEY] = n;
    m[i * MAP_FIELDS + MAP_SLOT] = slot;
  }

  delete(n: number): void {
    const m = this.#m;
    const mask = this.#mask;
    let hole = this.#home(n);
    for (let probes = 0; m[hole * MAP_FIELDS + MAP_KEY] !== n; probes++) {
      if (m[hole * MAP_FIELDS + MAP_KEY] === 0 || probes > mask) return;
      hole = (hole + 1) & mask;
    }
    // Backward shift: pull later entries of the run into the hole when their home allows it.
    for (let i = (hole + 1) & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
      const key = m[i * MAP_FIELDS + MAP_KEY]!;
      if (key === 0) break;
      const home = this.#home(key);
      const fits = hole <= i ? home <= hole || home > i : home <= hole && home > i;
      if (fits) {
        m[hole * MAP_FIELDS + MAP_KEY] = key;
        m[hole * MAP_FIELDS + MAP_SLOT] = m[i * MAP_FIELDS + MAP_SLOT]!;
        hole = i;
      }
    }
    m[hole * MAP_FIELDS + MAP_KEY] = 0;
  }

  clear(): void {
    this.#m.fill(0);
  }

  #home(n: number): number {
    // Fibonacci hashing of the low and high 32 bits (ToUint32 is exact modulo 2^32 for safe integers).
    const high = n < 0x1_0000_0000 ? 0 : Math.imul(Math.floor(n / 0x1_0000_0000), 0x85ebca6b);
    const mixed = Math.imul((n >>> 0) ^ high, 0x9e3779b1);
    return (mixed >>> this.#shift) & this.#mask;
  }
}
