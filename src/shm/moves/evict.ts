import {
  COMMIT_EVICTED, DATA_REF, ERROR_REF, FREE, FREE_SLOT_COUNT, HEADERS_REF, JOB_NUM, KEY_BYTES, KEY_REF, PAYLOAD_BYTES, RESULT_REF, TYPE, statusOf,
} from '../memory/layout.js';
import { LAZY, type JournalNotes } from '../journal/journal-notes.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { Mover } from '../protocol/mover.js';
import type { QueueMemory } from '../queue-memory.js';
import { keyHash } from '../../key-hash.js';
import { chunksOf, countedChainBytes, leadingTypeBytes } from '../records.js';

/** Where an evicted job's counted chains (error, result, headers) go back. */
export interface ChainFreer {
  freeCounted(ref: number): void;
}

/**
 * The move *evict* (lock holder, a flip): SUCCEEDED or CANCELLED → FREE, the
 * finished job in `slot` (its word `word`, not frozen: keeps I20 with
 * Room#evictFirstOf, which picks it) gone for good: noted for the journal,
 * the word flipped (Mover#flip: the CAS is the whole move), then its strings,
 * key, job number and slot freed. `record` is scratch for its strings.
 */
export function evictJob(
  memory: QueueMemory, notes: JournalNotes, mover: Mover, room: ChainFreer, record: Float64Array, slot: number, word: number,
): void {
  const { slots, arena, jobMap, keyMap, freeSlots, header, rows } = memory;
  // Only the strings and the number: an evicted job is the oldest, its record long out of the cache, and each column is a line apart.
  slots.readStrings(slot, record);
  const chunks = chunksOf(record);
  const dataRef = record[DATA_REF]!;
  const dataBytes = leadingTypeBytes(record[TYPE]!) + record[PAYLOAD_BYTES]!;
  const errorRef = record[ERROR_REF]!;
  const resultRef = record[RESULT_REF]!;
  const headersRef = record[HEADERS_REF]!;
  const jobNum = slots.get(slot, JOB_NUM);
  // Read before the chain is freed: the key is free again once its job is gone.
  const key = record[KEY_REF]! > 0 ? keyMap.keyOf(slot) : null;
  assertHeld(memory.lock);
  notes.noteOwnEviction(slot, chunks, notes.note(jobNum, COMMIT_EVICTED, LAZY));
  if (mover.flip(slot, word, FREE, statusOf(word)) < 0) throw new LockLost();
  // Out of the listing before the slot takes another job (and job number).
  memory.listing.sync(slot);
  rows.finishedChunks(mover.row, -chunks);
  arena.free(dataRef, dataBytes);
  room.freeCounted(errorRef);
  room.freeCounted(resultRef);
  if (key !== null) {
    keyMap.delete(key, keyHash(key), slot);
    arena.free(record[KEY_REF]!, countedChainBytes(record[KEY_BYTES]!));
  }
  room.freeCounted(headersRef);
  jobMap.delete(jobNum, slot);
  freeSlots[header[FREE_SLOT_COUNT]!++] = slot;
}
