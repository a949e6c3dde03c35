import { describe, expect, it } from 'vitest';
import { FREE, INITIAL_SLOTS, RECORD_COLUMNS, SLOT_HIGH_WATER } from '../../dist/shm/memory/layout.js';
import { placeJob, twoViews } from './tables.js';

/**
 * The slot table (src/shm/tables/slots.ts), through its own API: lease words and
 * record columns in growable buffers, grown as slots are first used, and
 * re-made into by a view that meets a slot past it.
 */
describe('slot table', () => {
  it('starts with room for INITIAL_SLOTS slots and grows, doubling, up to its capacity', () => {
    const capacity = 10 * INITIAL_SLOTS;
    const { buffers, first } = twoViews(capacity);
    expect(first.slots.capacity).toBe(capacity);
    expect(buffers.slotWords.byteLength).toBe(INITIAL_SLOTS * 4);
    first.slots.grow(INITIAL_SLOTS + 1);
    expect(buffers.slotWords.byteLength).toBe(2 * INITIAL_SLOTS * 4);
    for (const [, array, name] of RECORD_COLUMNS) expect(buffers[name].byteLength).toBe(2 * INITIAL_SLOTS * array.BYTES_PER_ELEMENT);
    first.slots.grow(capacity);
    expect(buffers.slotWords.byteLength).toBe(capacity * 4);
    expect(first.slots.words.length).toBe(capacity);
  });

  it('reads a slot never used, past the grown slots, as FREE with job number 0', () => {
    const { first } = twoViews(8 * INITIAL_SLOTS);
    const past = 5 * INITIAL_SLOTS;
    expect(first.slots.reach(past)).toBe(false);
    expect(first.slots.word(past)).toBe(FREE);
    expect(first.slots.settledWord(past)).toBe(FREE);
    expect(first.slots.jobNum(past)).toBe(0);
  });

  it('shows another view the slots grown and written past its own view', () => {
    const { first, second } = twoViews(8 * INITIAL_SLOTS);
    const slot = 3 * INITIAL_SLOTS + 5;
    const word = placeJob(first, slot, 42, { priority: 7, runAt: 1234 });
    // `second` was made over INITIAL_SLOTS slots: the word read re-makes its views.
    expect(second.slots.words.length).toBe(INITIAL_SLOTS);
    expect(second.slots.word(slot)).toBe(word);
    expect(second.slots.jobNums[slot]).toBe(42);
    expect(second.slots.priorities[slot]).toBe(7);
    expect(second.slots.runAts[slot]).toBe(1234);
  });

  it('keeps a view up with the slots handed out, as each lock hold starts', () => {
    const { first, second } = twoViews(8 * INITIAL_SLOTS);
    placeJob(first, 2 * INITIAL_SLOTS, 9);
    first.header[SLOT_HIGH_WATER] = 2 * INITIAL_SLOTS + 1;
    second.slots.keepUp(second.header[SLOT_HIGH_WATER]!);
    expect(second.slots.jobNums.length).toBeGreaterThan(2 * INITIAL_SLOTS);
    expect(second.slots.jobNums[2 * INITIAL_SLOTS]).toBe(9);
  });
});
