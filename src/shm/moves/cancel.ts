import { CANCELLED, FINISH_SEQ, type SlotStatus } from '../memory/layout.js';
import { noteFinish } from '../records.js';
import type { JobMoves } from './job-moves.js';

/**
 * The move *cancel* (lock holder): READY or DELAYED (`status`, its word
 * `word`) → CANCELLED, finished now in the finish order, and any `finished`
 * sleeper told. False if the slot moved first.
 */
export function cancelJob(moves: JobMoves, slot: number, word: number, status: SlotStatus, now: number): boolean {
  const draft = moves.mover.start(slot);
  draft[FINISH_SEQ] = moves.nextFinishSeq();
  noteFinish(draft, now);
  if (!moves.moveTo(slot, word, CANCELLED, status)) return false;
  moves.memory.finishes.announce();
  return true;
}
