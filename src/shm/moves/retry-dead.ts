import { ATTEMPTS, DEAD, READY, RUN_AT } from '../memory/layout.js';
import type { JobMoves } from './job-moves.js';

/**
 * The move *retryDead* (lock holder): DEAD → READY, ready now with its
 * attempts counted from zero again. False if the slot moved first.
 */
export function retryDeadJob(moves: JobMoves, slot: number, word: number, now: number): boolean {
  const draft = moves.mover.start(slot);
  draft[ATTEMPTS] = 0;
  draft[RUN_AT] = moves.freshRunAt(now, 0, Infinity);
  return moves.moveTo(slot, word, READY, DEAD);
}
