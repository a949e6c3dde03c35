import { ATTEMPTS, DEAD, DELAYED, READY, RUN_AT, WAITING, WAITING_PARENTS } from '../memory/layout.js';
import type { JobMoves } from './job-moves.js';

/**
 * The move *retryDead* (lock holder): DEAD → READY, ready now with its
 * attempts counted from zero again; or, a flow's parent with `waiting`
 * children not ended (see Flows#awaitChildren), DEAD → DELAYED, waiting
 * for them again (keeps I28). WAITING written anew clears a flow's child's
 * AWAITED: should it die again, that death is its parent's to count. False
 * if the slot moved first.
 */
export function retryDeadJob(moves: JobMoves, slot: number, word: number, now: number, waiting = 0): boolean {
  const draft = moves.mover.start(slot);
  draft[ATTEMPTS] = 0;
  draft[RUN_AT] = moves.freshRunAt(now, 0, Infinity);
  draft[WAITING] = waiting;
  if (!moves.moveTo(slot, word, waiting > 0 ? DELAYED : READY, DEAD)) return false;
  if (waiting > 0) moves.memory.header[WAITING_PARENTS]!++;
  return true;
}
