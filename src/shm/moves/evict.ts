import {
  CANCELLED, COMMIT_EVICTED, DATA_REF, ERROR_REF, FREE, FREE_SLOT_COUNT, HEADERS_REF, JOB_NUM, KEY_BYTES, KEY_REF, PAYLOAD_BYTES, RESULT_REF, payloadLength, SUCCEEDED, TYPE, statusOf,
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
  if (!freeJob(memory, notes, mover, room, record, slot, word, LAZY)) throw new LockLost();
}

/**
 * What evict and remove (moves/remove.ts) share: the job in `slot` (its word
 * `word`, any status but RUNNING) noted gone for the journal (`lazy`: with the
 * next commit), its word flipped to FREE (the CAS is the whole move), then its
 * strings, key, job number and slot freed. False, with nothing freed, if the
 * slot no longer held `word` (a lock-free claim took a READY job first).
 */
export function freeJob(
  memory: QueueMemory, notes: JournalNotes, mover: Mover, room: ChainFreer, record: Float64Array, slot: number, word: number, lazy: boolean,
): boolean {
  const { slots, arena, jobMap, keyMap, freeSlots, header, rows } = memory;
  // Only the strings and the number: an evicted job is the oldest, its record long out of the cache, and each column is a line apart.
  slots.readStrings(slot, record);
  const chunks = chunksOf(record);
  const dataRef = record[DATA_REF]!;
  const dataBytes = leadingTypeBytes(record[TYPE]!) + payloadLength(record[PAYLOAD_BYTES]!);
  const errorRef = record[ERROR_REF]!;
  const resultRef = record[RESULT_REF]!;
  const headersRef = record[HEADERS_REF]!;
  const jobNum = slots.get(slot, JOB_NUM);
  // Read before the chain is freed: the key is free again once its job is gone.
  const key = record[KEY_REF]! > 0 ? keyMap.keyOf(slot) : null;
  assertHeld(memory.lock);
  notes.noteOwnEviction(slot, chunks, notes.note(jobNum, COMMIT_EVICTED, lazy));
  const status = statusOf(word);
  if (mover.flip(slot, word, FREE, status) < 0) return false;
  // Out of the listing before the slot takes another job (and job number).
  memory.listing.sync(slot);
  // Only finished jobs count in ROW_FINISHED_CHUNKS (the chunks an eviction could make room with).
  if (status === SUCCEEDED || status === CANCELLED) rows.finishedChunks(mover.row, -chunks);
  // After the flip from a finished (or, for a remove, not RUNNING) word: no lease of the job is live (keeps I29).
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
  return true;
}
