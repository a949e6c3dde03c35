import { describe, expect, it } from 'vitest';
import { FINISH_RING, LEASE_RING, ROWS, ROW_RINGS, ROW_RING_ENTRIES } from '../../dist/shm/memory/layout.js';
import { twoViews } from './tables.js';

/**
 * The row table (src/shm/tables/rows.ts), through its own API: rows owned by the
 * instances of a queue, each with a lease ring and a finished ring its owner
 * appends to and the lock holder drains; the rings' buffer grows by a row's
 * rings as rows are first owned.
 */
const ROW_RING_BYTES = ROW_RINGS * Float64Array.BYTES_PER_ELEMENT;

function drained(memory: ReturnType<typeof twoViews>['first'], ring: typeof LEASE_RING | typeof FINISH_RING): number[][] {
  const out: number[][] = [];
  memory.rows.drain(ring, (key, slot, word) => out.push([key, slot, word]));
  return out;
}

describe('row table', () => {
  it("starts with row 0's rings only, and grows by a row's rings as each row is first owned", () => {
    const { buffers, first } = twoViews(64);
    expect(buffers.rowRings.byteLength).toBe(ROW_RING_BYTES);
    expect(first.rows.acquire()).toBe(1);
    expect(buffers.rowRings.byteLength).toBe(2 * ROW_RING_BYTES);
    expect(first.rows.acquire()).toBe(2);
    expect(buffers.rowRings.byteLength).toBe(3 * ROW_RING_BYTES);
    first.rows.release(1);
    // A freed row is taken again: its rings are there already.
    expect(first.rows.acquire()).toBe(1);
    expect(buffers.rowRings.byteLength).toBe(3 * ROW_RING_BYTES);
  });

  it('takes every row up to ROWS, then refuses with -1', () => {
    const { buffers, first } = twoViews(64);
    for (let row = 1; row < ROWS; row++) expect(first.rows.acquire()).toBe(row);
    expect(first.rows.acquire()).toBe(-1);
    expect(buffers.rowRings.byteLength).toBe(ROWS * ROW_RING_BYTES);
  });

  it("drains in one view the entries another view's row appended to rings grown past the first view", () => {
    const { first, second } = twoViews(64);
    // `first` holds the lock; `second` is an instance of another thread, taking rows 1 and 2 after `first` was made.
    const rowA = second.rows.acquire();
    const rowB = second.rows.acquire();
    second.rows.append(rowA, LEASE_RING, 100, 3, 33);
    second.rows.append(rowB, LEASE_RING, 200, 4, 44);
    second.rows.append(rowB, FINISH_RING, 300, 5, 55);
    expect(drained(first, LEASE_RING)).toEqual([[100, 3, 33], [200, 4, 44]]);
    expect(drained(first, FINISH_RING)).toEqual([[300, 5, 55]]);
    expect(drained(first, LEASE_RING)).toEqual([]);
  });

  it('has room for ROW_RING_ENTRIES entries a ring until the holder drains it', () => {
    const { first, second } = twoViews(64);
    const row = second.rows.acquire();
    for (let i = 0; i < ROW_RING_ENTRIES; i++) second.rows.append(row, LEASE_RING, i, i, i);
    expect(second.rows.hasRoom(row, LEASE_RING)).toBe(false);
    const entries = drained(first, LEASE_RING);
    expect(entries).toHaveLength(ROW_RING_ENTRIES);
    expect(entries.every(([key], i) => key === i)).toBe(true);
    expect(second.rows.room(row, LEASE_RING)).toBe(ROW_RING_ENTRIES);
  });
});
