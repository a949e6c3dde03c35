import { describe, expect, it } from 'vitest';
import { INITIAL_SLOTS } from '../../dist/shm/memory/layout.js';
import type { QueueMemory } from '../../dist/shm/queue-memory.js';
import { placeJob, twoViews } from './tables.js';

/**
 * The key map (src/shm/tables/keymap.ts), through its own API: idempotent key →
 * slot of the job holding it, open addressing keyed by the key's hash, the
 * key itself read from the slot's arena chain (KEY_REF).
 */
/** A job `jobNum` in `slot` holding `key` (its chain stored in the arena). */
function keyedJob(memory: QueueMemory, slot: number, jobNum: number, key: string): void {
  placeJob(memory, slot, jobNum);
  memory.slots.keyRefs[slot] = memory.arena.storeCounted(Buffer.byteLength(key), key);
}

/** A poor hash on purpose: many keys share a home entry, so probing and the removal's shift are exercised. */
function hashOf(key: string): number {
  return key.length * 31;
}

describe('key map', () => {
  it('finds each key at the slot that holds it, through runs of keys with one hash', () => {
    const { first } = twoViews(2 * INITIAL_SLOTS);
    const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`);
    keys.forEach((key, slot) => {
      keyedJob(first, slot, slot + 1, key);
      first.keyMap.set(key, hashOf(key), slot);
    });
    expect(keys.every((key, slot) => first.keyMap.find(key, hashOf(key)) === slot)).toBe(true);
    expect(first.keyMap.find('key-none', hashOf('key-none'))).toBe(-1);
    expect(first.keyMap.keyOf(17)).toBe('key-17');
  });

  it('removes a key only for the slot that holds it, and keeps the rest of its run findable', () => {
    const { first } = twoViews(2 * INITIAL_SLOTS);
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    keys.forEach((key, slot) => {
      keyedJob(first, slot, slot + 1, key);
      first.keyMap.set(key, hashOf(key), slot);
    });
    first.keyMap.delete('k5', hashOf('k5'), 6);
    expect(first.keyMap.find('k5', hashOf('k5'))).toBe(5);
    keys.forEach((key, slot) => slot % 2 === 0 && first.keyMap.delete(key, hashOf(key), slot));
    expect(keys.every((key, slot) => first.keyMap.find(key, hashOf(key)) === (slot % 2 === 0 ? -1 : slot))).toBe(true);
  });

  it('gives a key to the newer job on setIfNewer, and keeps it from an older one', () => {
    const { first } = twoViews(2 * INITIAL_SLOTS);
    keyedJob(first, 0, 10, 'same');
    keyedJob(first, 1, 20, 'same');
    keyedJob(first, 2, 5, 'same');
    first.keyMap.setIfNewer('same', hashOf('same'), 0);
    first.keyMap.setIfNewer('same', hashOf('same'), 1);
    first.keyMap.setIfNewer('same', hashOf('same'), 2);
    expect(first.keyMap.find('same', hashOf('same'))).toBe(1);
  });

  it('finds keys of slots grown past another view of the queue', () => {
    const { first, second } = twoViews(8 * INITIAL_SLOTS);
    const slot = 6 * INITIAL_SLOTS + 3;
    keyedJob(first, slot, slot + 1, 'far away');
    first.keyMap.set('far away', hashOf('far away'), slot);
    // `second` made before the slots grew: it re-makes its views as a lock hold starts (keepUp), then reads the key.
    second.slots.keepUp(slot + 1);
    expect(second.keyMap.find('far away', hashOf('far away'))).toBe(slot);
  });
});

describe('key map growth', () => {
  it('starts sized for the first slots and grows, rehashed, as keys come to slots past them, keeping every key', () => {
    const capacity = 16 * INITIAL_SLOTS;
    const { buffers, first, second } = twoViews(capacity);
    const start = buffers.keyMap.byteLength;
    expect(start).toBeLessThan(buffers.keyMap.maxByteLength);
    const slots = Array.from({ length: 600 }, (_, i) => i * 20);
    slots.forEach((slot, i) => {
      keyedJob(first, slot, i + 1, `key ${i}`);
      first.keyMap.set(`key ${i}`, hashOf(`key ${i}`), slot);
    });
    expect(buffers.keyMap.byteLength).toBeGreaterThan(start);
    expect(slots.every((slot, i) => first.keyMap.find(`key ${i}`, hashOf(`key ${i}`)) === slot)).toBe(true);
    // Another holder's view, made before the growth, finds them all in the rehashed table.
    second.slots.keepUp(slots.at(-1)! + 1);
    expect(slots.every((slot, i) => second.keyMap.find(`key ${i}`, hashOf(`key ${i}`)) === slot)).toBe(true);
    second.keyMap.delete('key 7', hashOf('key 7'), slots[7]!);
    expect(first.keyMap.find('key 7', hashOf('key 7'))).toBe(-1);
    expect(first.keyMap.find('key 8', hashOf('key 8'))).toBe(slots[8]);
  });
});
