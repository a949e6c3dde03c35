import { describe, expect, it } from 'vitest';
import { ATTENTION, LEVELS, OVERFLOW, RING_ENTRY_BYTES, RUNNING, ringEntries, nextWord } from '../../dist/shm/memory/layout.js';
import { CLAIMED, LOST, type Claimer } from '../../dist/shm/tables/ready.js';
import type { QueueMemory } from '../../dist/shm/queue-memory.js';
import { placeJob, twoViews } from './tables.js';

/**
 * The ready index (src/shm/tables/ready.ts), through its own API: a ring per
 * priority level in (runAt, submission) order, filed by the lock holder and
 * consumed lock-free by any thread's poll; the rings' buffer grows by a
 * level's ring as levels are made.
 */
/** Claims as a poll does: a CAS of the slot's word from the one its entry was made for. */
function claimerOf(memory: QueueMemory): Claimer {
  return {
    tryClaim(slot, word) {
      return Atomics.compareExchange(memory.slots.words, slot, word, nextWord(word, RUNNING)) === word ? CLAIMED : LOST;
    },
  };
}

function pollAll(memory: QueueMemory, now: number): number[] {
  const claimer = claimerOf(memory);
  const out: number[] = [];
  for (let slot = memory.ready.poll(now, claimer); slot >= 0; slot = memory.ready.poll(now, claimer)) out.push(slot);
  return out;
}

describe('ready index', () => {
  it('hands out the highest priority first, each level in runAt order', () => {
    const { first } = twoViews(256);
    const jobs = [
      { priority: 0, runAt: 5 }, { priority: 9, runAt: 7 }, { priority: 0, runAt: 6 }, { priority: 3, runAt: 1 }, { priority: 9, runAt: 8 },
    ];
    jobs.forEach((fields, slot) => first.ready.file(slot, placeJob(first, slot, slot + 1, fields)));
    expect(pollAll(first, 100)).toEqual([1, 4, 3, 0, 2]);
  });

  it('passes over jobs not due yet, and an entry whose slot has moved on', () => {
    const { first } = twoViews(256);
    first.ready.file(0, placeJob(first, 0, 1, { runAt: 10 }));
    first.ready.file(1, placeJob(first, 1, 2, { runAt: 50 }));
    first.ready.file(2, placeJob(first, 2, 3, { runAt: 60 }));
    // Slot 1 claimed by someone else first: its entry is stale.
    Atomics.store(first.slots.words, 1, nextWord(first.slots.word(1), RUNNING));
    expect(pollAll(first, 55)).toEqual([0]);
    expect(pollAll(first, 60)).toEqual([2]);
  });

  it("grows the rings' buffer a level at a time, as levels are made", () => {
    const capacity = 1024;
    const { buffers, first } = twoViews(capacity);
    const levelBytes = ringEntries(capacity) * RING_ENTRY_BYTES;
    expect(buffers.levelRings.byteLength).toBe(0);
    first.ready.file(0, placeJob(first, 0, 1, { priority: 5 }));
    expect(buffers.levelRings.byteLength).toBe(levelBytes);
    first.ready.file(1, placeJob(first, 1, 2, { priority: 5 }));
    expect(buffers.levelRings.byteLength).toBe(levelBytes);
    for (let p = 0; p < LEVELS + 3; p++) first.ready.file(2 + p, placeJob(first, 2 + p, 3 + p, { priority: 100 + p }));
    expect(buffers.levelRings.byteLength).toBe(LEVELS * levelBytes);
  });

  it('lets another view poll the levels and slots made past its own view', () => {
    const { first, second } = twoViews(8192);
    // `second`, a poller of another thread, made its views before any level or slot past the first 1024 existed.
    const count = 3000;
    for (let slot = 0; slot < count; slot++) first.ready.file(slot, placeJob(first, slot, slot + 1, { priority: slot % 4, runAt: slot }));
    const polled = pollAll(second, count);
    expect(polled).toHaveLength(count);
    const expected = Array.from({ length: count }, (_, slot) => slot).sort((a, b) => (b % 4) - (a % 4) || a - b);
    expect(polled).toEqual(expected);
  });
});

/** Claims under the lock, as the locked poll does, until nothing is ready: the slots in the order claimed. */
function pollAllLocked(memory: QueueMemory, now: number): number[] {
  const claimer = claimerOf(memory);
  const out: number[] = [];
  for (let slot = memory.ready.pollLocked(now, claimer); slot >= 0; slot = memory.ready.pollLocked(now, claimer)) out.push(slot);
  return out;
}

const overflowSet = (memory: QueueMemory) => (Atomics.load(memory.lockWords, ATTENTION) & OVERFLOW) !== 0;

/** Files `groups[i]`'s job in slot i (job number i + 1), as the lock holder does. */
function fileGroups(memory: QueueMemory, groups: readonly number[], from = 0): void {
  groups.forEach((group, i) => memory.ready.file(from + i, placeJob(memory, from + i, from + i + 1, { group })));
}

describe('ready index, while groups take turns (I27)', () => {
  it('keeps jobs filed in turn order in the ring, which another thread drains lock-free in that order', () => {
    const { first, second } = twoViews(256);
    first.turns.start();
    // A and B alternate: turns 1, 1, 2, 2, 3, 3, never below the ring's tail.
    fileGroups(first, [1, 2, 1, 2, 1, 2]);
    expect(overflowSet(first)).toBe(false);
    expect(pollAll(second, 100)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('files a turn below its ring\'s tail in the overflow heap, and the locked poll serves both by turn', () => {
    const { first } = twoViews(256);
    first.turns.start();
    // A's four take turns 1 to 4 (the ring); B's two, filed after, turns 1 and 2: below the tail, in the heap.
    fileGroups(first, [1, 1, 1, 1, 2, 2]);
    expect(overflowSet(first)).toBe(true);
    // By (turn, job number): A1 B1 A2 B2 A3 A4.
    expect(pollAllLocked(first, 100)).toEqual([0, 4, 1, 5, 2, 3]);
    expect(overflowSet(first)).toBe(false);
  });

  it('gives a group that arrives after lock-free claims its turn from the ring\'s shared head: one short of its entry\'s', () => {
    const { first, second } = twoViews(256);
    first.turns.start();
    fileGroups(first, new Array<number>(40).fill(1));
    // 20 claims lock-free: the head moved to 16 at the 16th (HEAD_STEP), the poller's own cursor is at 20.
    const claimer = claimerOf(second);
    for (let i = 0; i < 20; i++) expect(second.ready.poll(100, claimer)).toBe(i);
    fileGroups(first, [2], 40);
    // The entry at the head is A's 17th (turn 17): the round is at least 16, so B's job takes turn 17, in the heap.
    expect(overflowSet(first)).toBe(true);
    // The turns filed, as a rebuild reads them: A's 20 left in the ring at turns 21 to 40, B's in the heap.
    const turns = new Map<number, number>();
    first.ready.turnsFiled(turns);
    expect(turns).toEqual(new Map([...Array.from({ length: 20 }, (_, i) => [20 + i, 21 + i] as const), [40, 17]]));
    expect(pollAllLocked(first, 100).slice(0, 2)).toEqual([40, 20]);
  });
});
