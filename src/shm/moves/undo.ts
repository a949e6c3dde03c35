import { COMMIT_MOVED, COMMIT_SUBMITTED, DATA_REF, ERROR_BYTES, ERROR_REF, FREE, JOB_NUM, MOVES, PAYLOAD_BYTES } from '../memory/layout.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { UndoneEviction, UndoneMove } from '../journal/undo-log.js';
import type { JobMoves } from './job-moves.js';
import type { Placement } from './place.js';
import { NOT_COUNTED } from '../protocol/mover.js';
import { NO_ROOM } from '../tables/arena.js';

/*
 * The move *undo* (journal; lock holder, the moving call's own thread): a
 * move's `to` → its `from`, the record restored, when the commit that was to
 * keep it failed; and the finished jobs that call evicted put back.
 */

/**
 * Undoes a call's own moves whose commit failed, newest first: a submitted
 * job's slot is freed, a moved job gets its old record (and lastError)
 * back. Each undo is a move of its own, with a higher move count, and is
 * noted (lazily, see JournalNotes#noteUndone): the next commit writes the
 * job as it now is, or deletes its row, over anything a presumed-dead
 * leader may still write. The caller then rebuilds every hint from the
 * slots (counters, rings, heaps, the arena's chains).
 *
 * A move whose slot no longer holds its word is left alone (only a
 * presumed-dead holder's repairs can have moved a frozen job).
 */
export function undoMoves(moves: JobMoves, undone: readonly UndoneMove[]): void {
  const { memory, notes, room } = moves;
  const { slots, awaited } = memory;
  for (const move of undone) {
    if (slots.word(move.slot) !== move.to) continue;
    // An undone edit of content is written whole, as its edit was (see JournalNotes#noteOwnMove).
    notes.noteUndone(slots.get(move.slot, JOB_NUM), move.ticket, move.data === undefined ? COMMIT_MOVED : COMMIT_SUBMITTED);
    assertHeld(memory.lock);
    if (move.record === null) {
      if (moves.mover.flip(move.slot, move.to, FREE, NOT_COUNTED) < 0) throw new LockLost();
    } else {
      const draft = moves.mover.draft;
      const moveCount = slots.get(move.slot, MOVES);
      draft.set(move.record);
      if (move.lastError !== null) {
        draft[ERROR_REF] = room.storeError(move.lastError);
        if (draft[ERROR_REF]! <= 0) draft[ERROR_BYTES] = 0;
      }
      if (move.data !== undefined) restoreData(moves, move.slot, move.data, draft);
      draft[MOVES] = moveCount + 1;
      if (moves.mover.apply(move.slot, move.to, move.status, NOT_COUNTED) < 0) throw new LockLost();
      if (move.leasedAt !== undefined) memory.rateLimits.uncounted(slots.types[move.slot]!, move.leasedAt);
    }
    awaited[move.slot] = 0;
  }
}

/**
 * The data chain an undone edit freed, stored again for the restored record
 * (`draft`). Without room for it (other calls took the chunks since), the job
 * keeps the edited payload the slot holds: the rebuild that follows an undo
 * frees whichever chain no slot names.
 */
function restoreData(moves: JobMoves, slot: number, data: Uint8Array, draft: Float64Array): void {
  // The chain's bytes as they were: the restored record's PAYLOAD_BYTES says text or binary.
  const ref = moves.memory.arena.storeBytes(data);
  if (ref !== NO_ROOM) {
    draft[DATA_REF] = ref;
    return;
  }
  const slots = moves.memory.slots;
  draft[DATA_REF] = slots.get(slot, DATA_REF);
  draft[PAYLOAD_BYTES] = slots.get(slot, PAYLOAD_BYTES);
}

/**
 * Puts back the finished jobs an undone call evicted, oldest evicted
 * first, each only if it fits with no eviction (see UndoLog), and noted
 * new (see JournalNotes#noteUndone): the next commit inserts it whole,
 * whether or not a commit took its eviction to the journal. Whether any
 * went back; the caller then rebuilds the hints.
 */
export function restoreEvicted(moves: JobMoves, placement: Placement, evictions: readonly UndoneEviction[], now: number): boolean {
  let restored = false;
  for (const { job, chunks, ticket } of evictions) {
    if (!moves.room.fitsNow(chunks)) continue;
    moves.notes.noteUndone(job.num, ticket, COMMIT_SUBMITTED);
    placement.restoreJob(job, now);
    restored = true;
  }
  return restored;
}
