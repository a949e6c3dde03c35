import { FINISH_BASE, FINISH_SEQ, FINISHED_AT, MOVES, RESULT_BYTES, RESULT_REF, RUNNING, SUCCEEDED, fieldBit } from '../memory/layout.js';
import type { Mover } from '../protocol/mover.js';
import type { QueueMemory } from '../queue-memory.js';
import { noteFinish } from '../records.js';
import type { MoveNotes } from './worker-path.js';

/** A complete's finish order (which shares LEASE_UNTIL's column), its result, when it finished, its move count. */
const FINISH_SEQ_BIT = fieldBit(FINISH_SEQ);
const RESULT_REF_BIT = fieldBit(RESULT_REF);
const FINISHED_AT_BIT = fieldBit(FINISHED_AT);
const MOVES_BIT = fieldBit(MOVES);

/**
 * The move *complete* (the lease holder, lock-free or locked): RUNNING →
 * SUCCEEDED at `now`, from the RUNNING word whose TOKEN is the caller's
 * (WorkerPath#leasedWord, keeps I7), with its place in the eviction order
 * and its result (`resultRef`, the arena chain of it, under the lock only:
 * the holder allocates; 0 for none). With a journal (`notes`), counted and
 * noted just before the move. The new word, or -1 if the slot moved first
 * (an expiry): the maker looks again, and after the move appends it to its
 * finish ring and announces the finish.
 */
export function completeJob(
  memory: QueueMemory, mover: Mover, slot: number, word: number, now: number, resultRef: number, notes: MoveNotes | undefined,
): number {
  const { header, finishes, slots } = memory;
  const draft = mover.draft;
  // Its strings, which finished jobs' chunks count, and its key.
  slots.readStrings(slot, draft);
  // The eviction order: one shared counter, so that finishes of every thread compare.
  const finishSeq = header[FINISH_BASE]! + finishes.count();
  draft[FINISH_SEQ] = finishSeq;
  let fields = FINISH_SEQ_BIT;
  if (resultRef > 0) {
    draft[RESULT_REF] = resultRef;
    draft[RESULT_BYTES] = memory.arena.countedBytes(resultRef);
    fields |= RESULT_REF_BIT;
  }
  noteFinish(draft, now);
  fields |= FINISHED_AT_BIT;
  if (notes !== undefined) {
    draft[MOVES] = slots.moves[slot]! + 1;
    fields |= MOVES_BIT;
    notes.noteOwnMove(slot, word, SUCCEEDED);
  }
  return mover.apply(slot, word, SUCCEEDED, RUNNING, fields);
}
