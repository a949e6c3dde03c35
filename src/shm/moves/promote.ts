import { DELAYED, READY } from '../memory/layout.js';
import type { Mover } from '../protocol/mover.js';

/**
 * The move *promote* (lock holder, a flip): DELAYED → READY, a delayed job
 * whose runAt has come. No field changes, so the one CAS is the whole move
 * and its linearization point (Mover#flip). The new word, or -1 if the slot
 * moved first.
 */
export function promoteJob(mover: Mover, slot: number, word: number): number {
  return mover.flip(slot, word, READY, DELAYED);
}
