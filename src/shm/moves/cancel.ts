import { CANCELLED, FINISH_SEQ, RUNNING, type SlotStatus } from '../memory/layout.js';
import { noteFinish } from '../records.js';
import { MoveEvent, noteMove } from '../move-events.js';
import type { JobMoves } from './job-moves.js';

/**
 * The move *cancel* (lock holder): READY, DELAYED or RUNNING (`status`, its
 * word `word`) → CANCELLED, finished now in the finish order, and any
 * `finished` sleeper told. False if the slot moved first.
 *
 * From RUNNING the lease ends with the move: the word is new (keeps I3), so
 * the holder's token names no lease any more and its complete, fail, extend
 * or release is refused as stale, as a zombie's after an expiry (keeps I7).
 * The attempt stays counted (ATTEMPTS is the claim's): the handler ran, and
 * a view says how often. The caller tells the holder (see
 * protocol/cancels.ts) once the move is durable.
 */
export function cancelJob(moves: JobMoves, slot: number, word: number, status: SlotStatus, now: number): boolean {
  const waited = moves.flows.waits(slot, word);
  const draft = moves.mover.start(slot);
  draft[FINISH_SEQ] = moves.nextFinishSeq();
  noteFinish(draft, now);
  if (!moves.moveTo(slot, word, CANCELLED, status)) return false;
  if (waited) moves.flows.leftWaiting();
  noteMove(moves.memory, MoveEvent.Cancelled, draft, status === RUNNING ? now : NaN);
  moves.memory.finishes.announce();
  // Last: the parent's move takes the mover's draft (keeps I28).
  moves.flows.childEnded(slot, CANCELLED, now);
  return true;
}
