import { describe, expect, it } from 'vitest';
import { FinishOrder } from '../../dist/shm/tables/finish-order.js';
import { ENTRY_FIELDS, ENTRY_K1, ENTRY_SLOT, FINISHED_HEAD, HEADER_FIELDS, HEAP_SIZE_FINISHED, INITIAL_HEAP_ENTRIES } from '../../dist/shm/memory/layout.js';

/**
 * The eviction order (src/shm/tables/finish-order.ts), through its own API: a
 * sorted ring of finished jobs in a growable buffer, grown as entries come,
 * its wrapped entries moved past the old end so that it reads the same from
 * its head; another view of the buffer (as another lock holder's) follows.
 */
const ENTRY_BYTES = ENTRY_FIELDS * Float64Array.BYTES_PER_ELEMENT;

function orderOver(buffer: SharedArrayBuffer, header: Float64Array): FinishOrder {
  return new FinishOrder(buffer, header, HEAP_SIZE_FINISHED, FINISHED_HEAD);
}

function takeAll(order: FinishOrder): number[] {
  const out: number[] = [];
  while (order.size > 0) {
    out.push(order.top(ENTRY_K1));
    order.pop();
  }
  return out;
}

describe('eviction order', () => {
  it('files entries in key order, out-of-order ones in their place', () => {
    const order = orderOver(new SharedArrayBuffer(INITIAL_HEAP_ENTRIES * ENTRY_BYTES, { maxByteLength: 4 * INITIAL_HEAP_ENTRIES * ENTRY_BYTES }), new Float64Array(HEADER_FIELDS));
    for (const k of [1, 2, 5, 3, 0, 4]) order.push(k, 0, 0, k, 0);
    expect(takeAll(order)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('grows past its first entries with the ring wrapped, reading the same from its head, in this view and another', () => {
    const buffer = new SharedArrayBuffer(INITIAL_HEAP_ENTRIES * ENTRY_BYTES, { maxByteLength: 8 * INITIAL_HEAP_ENTRIES * ENTRY_BYTES });
    const header = new Float64Array(new SharedArrayBuffer(HEADER_FIELDS * 8));
    const order = orderOver(buffer, header);
    const other = orderOver(buffer, header);
    let next = 0;
    for (; next < INITIAL_HEAP_ENTRIES; next++) order.push(next, 0, 0, next, 0);
    for (let i = 0; i < 600; i++) order.pop();
    // Past the end of the ring: these wrap to its start, then the ring grows with them wrapped.
    for (; next < INITIAL_HEAP_ENTRIES + 1500; next++) order.push(next, 0, 0, next, 0);
    expect(buffer.byteLength).toBeGreaterThan(INITIAL_HEAP_ENTRIES * ENTRY_BYTES);
    // One out of order, put in its place in the grown ring.
    order.push(700.5, 0, 0, 1, 0);
    const expected = [...Array.from({ length: next - 600 }, (_, i) => i + 600)];
    expected.splice(101, 0, 700.5);
    expect(other.top(ENTRY_SLOT)).toBe(600);
    expect(takeAll(other)).toEqual(expected);
  });

  it('is full only at the entries its buffer may grow to', () => {
    const buffer = new SharedArrayBuffer(INITIAL_HEAP_ENTRIES * ENTRY_BYTES, { maxByteLength: 2 * INITIAL_HEAP_ENTRIES * ENTRY_BYTES });
    const order = orderOver(buffer, new Float64Array(HEADER_FIELDS));
    for (let i = 0; i < INITIAL_HEAP_ENTRIES; i++) order.append(i, 0, 0, i, i % 2);
    expect(order.full).toBe(false);
    for (let i = INITIAL_HEAP_ENTRIES; i < 2 * INITIAL_HEAP_ENTRIES; i++) order.append(i, 0, 0, i, i % 2);
    expect(order.full).toBe(true);
    order.compact((_slot, word) => word === 1);
    expect(order.size).toBe(INITIAL_HEAP_ENTRIES);
    expect(takeAll(order).every((k) => k % 2 === 1)).toBe(true);
  });
});
