import { QueueMemory } from '../../dist/shm/queue-memory.js';
import { READY, nextWord } from '../../dist/shm/memory/layout.js';

/**
 * Two views of one queue's memory, as two threads hold them: `first` and
 * `second` are made over the same new buffers before anything grows.
 * Imports the built core from dist/shm, the documented internal seam for the
 * core's own tests.
 */
export function twoViews(capacity: number, arenaBytes = 1 << 20) {
  const buffers = QueueMemory.create(capacity, arenaBytes, false);
  return { buffers, first: new QueueMemory(buffers, 60_000), second: new QueueMemory(buffers, 60_000) };
}

/** Hands out the next slot as the lock holder does (SLOT_HIGH_WATER up, the slot table grown first), with a READY word and job number `jobNum` (and its group's number, 0: none). */
export function placeJob(memory: QueueMemory, slot: number, jobNum: number, fields: { priority?: number; runAt?: number; group?: number } = {}): number {
  memory.slots.grow(slot + 1);
  const { slots } = memory;
  slots.jobNums[slot] = jobNum;
  slots.priorities[slot] = fields.priority ?? 0;
  slots.runAts[slot] = fields.runAt ?? 0;
  slots.groups[slot] = fields.group ?? 0;
  const word = nextWord(slots.word(slot), READY);
  Atomics.store(slots.words, slot, word);
  return word;
}
