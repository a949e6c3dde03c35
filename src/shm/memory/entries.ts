import { ENTRY_FIELDS, ENTRY_K1, ENTRY_K2, ENTRY_K3, ENTRY_SLOT, ENTRY_WORD } from './layout.js';

/**
 * The entries the lock holder files jobs by (heaps, the finished order):
 * ENTRY_FIELDS float64s each, keys K1, K2, K3 compared in that order, then
 * the slot and the word the entry was made for (layout.ts).
 */

/** Sign of (the entry at `position` of `entries`) - (k1, k2, k3). */
export function compareEntry(entries: Float64Array, position: number, k1: number, k2: number, k3: number): number {
  const at = position * ENTRY_FIELDS;
  const a1 = entries[at + ENTRY_K1]!;
  if (a1 !== k1) return a1 < k1 ? -1 : 1;
  const a2 = entries[at + ENTRY_K2]!;
  if (a2 !== k2) return a2 < k2 ? -1 : 1;
  const a3 = entries[at + ENTRY_K3]!;
  return a3 === k3 ? 0 : a3 < k3 ? -1 : 1;
}

/** Writes an entry at `position` of `entries`. */
export function writeEntry(entries: Float64Array, position: number, k1: number, k2: number, k3: number, slot: number, word: number): void {
  const at = position * ENTRY_FIELDS;
  entries[at + ENTRY_K1] = k1;
  entries[at + ENTRY_K2] = k2;
  entries[at + ENTRY_K3] = k3;
  entries[at + ENTRY_SLOT] = slot;
  entries[at + ENTRY_WORD] = word;
}

/** Copies the entry at position `from` of `entries` to position `to`. */
export function copyEntry(entries: Float64Array, from: number, to: number): void {
  if (from === to) return;
  const f = from * ENTRY_FIELDS;
  const t = to * ENTRY_FIELDS;
  for (let k = 0; k < ENTRY_FIELDS; k++) entries[t + k] = entries[f + k]!;
}
