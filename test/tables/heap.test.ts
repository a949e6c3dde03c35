import { describe, expect, it } from 'vitest';
import { SharedHeap } from '../../dist/shm/tables/heap.js';
import { ENTRY_FIELDS, ENTRY_K1, ENTRY_K2, ENTRY_SLOT, ENTRY_WORD, HEADER_FIELDS, HEAP_SIZE_DELAYED, INITIAL_HEAP_ENTRIES } from '../../dist/shm/memory/layout.js';

/**
 * The shared heap (src/shm/tables/heap.ts), through its own API: a 4-ary min-heap
 * in a growable buffer, grown by push as it fills, read by other views of the
 * same buffer (as another thread's) after the growth. Imports the built
 * table from dist/shm, the core's documented internal seam for its own tests.
 */
const ENTRY_BYTES = ENTRY_FIELDS * Float64Array.BYTES_PER_ELEMENT;

function heapBuffer(maxEntries: number): SharedArrayBuffer {
  return new SharedArrayBuffer(INITIAL_HEAP_ENTRIES * ENTRY_BYTES, { maxByteLength: maxEntries * ENTRY_BYTES });
}

function popAll(heap: SharedHeap): number[][] {
  const out: number[][] = [];
  while (heap.size > 0) {
    out.push([heap.top(ENTRY_K1), heap.top(ENTRY_K2), heap.top(ENTRY_SLOT), heap.top(ENTRY_WORD)]);
    heap.pop();
  }
  return out;
}

describe('shared heap', () => {
  it('pops entries in (K1, K2, K3) order', () => {
    const header = new Float64Array(HEADER_FIELDS);
    const heap = new SharedHeap(heapBuffer(4 * INITIAL_HEAP_ENTRIES), header, HEAP_SIZE_DELAYED);
    const keys = [5, 3, 9, 1, 3, 7];
    keys.forEach((k1, slot) => heap.push(k1, 10 - slot, 0, slot, 100 + slot));
    expect(heap.size).toBe(keys.length);
    expect(popAll(heap).map(([k1, k2]) => [k1, k2])).toEqual([[1, 7], [3, 6], [3, 9], [5, 10], [7, 5], [9, 8]]);
  });

  it('grows its buffer past the first INITIAL_HEAP_ENTRIES entries, doubling, and only as entries come', () => {
    const header = new Float64Array(HEADER_FIELDS);
    const buffer = heapBuffer(8 * INITIAL_HEAP_ENTRIES);
    const heap = new SharedHeap(buffer, header, HEAP_SIZE_DELAYED);
    for (let i = 0; i < INITIAL_HEAP_ENTRIES; i++) heap.push(i, 0, 0, i, 0);
    expect(buffer.byteLength).toBe(INITIAL_HEAP_ENTRIES * ENTRY_BYTES);
    heap.push(-1, 0, 0, -1, 0);
    expect(buffer.byteLength).toBe(2 * INITIAL_HEAP_ENTRIES * ENTRY_BYTES);
    expect(heap.top(ENTRY_K1)).toBe(-1);
    expect(popAll(heap).map(([k1]) => k1)).toEqual([-1, ...Array.from({ length: INITIAL_HEAP_ENTRIES }, (_, i) => i)]);
  });

  it('shows the entries another view pushed past its own view, once they are counted', () => {
    const header = new Float64Array(new SharedArrayBuffer(HEADER_FIELDS * 8));
    const buffer = heapBuffer(8 * INITIAL_HEAP_ENTRIES);
    // Two views of one heap, as two threads hold them: `reader` made before any growth.
    const writer = new SharedHeap(buffer, header, HEAP_SIZE_DELAYED);
    const reader = new SharedHeap(buffer, header, HEAP_SIZE_DELAYED);
    const count = 3 * INITIAL_HEAP_ENTRIES + 7;
    for (let i = count; i > 0; i--) writer.push(i, 0, 0, i, i);
    expect(buffer.byteLength).toBe(4 * INITIAL_HEAP_ENTRIES * ENTRY_BYTES);
    const popped = popAll(reader);
    expect(popped).toHaveLength(count);
    expect(popped.every(([k1, , slot, word], i) => k1 === i + 1 && slot === i + 1 && word === i + 1)).toBe(true);
  });

  it('is full at the entries its buffer may grow to, and compact drops the stale ones', () => {
    const header = new Float64Array(HEADER_FIELDS);
    const maxEntries = 2 * INITIAL_HEAP_ENTRIES;
    const heap = new SharedHeap(heapBuffer(maxEntries), header, HEAP_SIZE_DELAYED);
    for (let i = 0; i < maxEntries; i++) heap.push(i, 0, 0, i, i % 2);
    expect(heap.full).toBe(true);
    heap.compact((_slot, word) => word === 1);
    expect(heap.full).toBe(false);
    expect(popAll(heap).map(([k1]) => k1)).toEqual(Array.from({ length: INITIAL_HEAP_ENTRIES }, (_, i) => 2 * i + 1));
  });
});
