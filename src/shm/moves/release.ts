import { ATTEMPTS, DELAYED, LEASE_UNTIL, READY, RUNNING, RUN_AT } from '../memory/layout.js';
import type { JobMoves } from './job-moves.js';

/**
 * The move *release* (lock holder): RUNNING → READY, or DELAYED for a
 * `delay` above 0 (a snooze), a lease handed back unfinished (its worker is
 * shutting down, or snoozes the job), ready `delay` after `now`, the attempt
 * not counted, lastError kept. The caller has checked that `word` holds the
 * caller's lease. False if the slot moved first.
 */
export function releaseLease(moves: JobMoves, slot: number, word: number, now: number, delay = 0): boolean {
  const draft = moves.mover.start(slot);
  draft[ATTEMPTS]!--;
  draft[RUN_AT] = moves.freshRunAt(now, delay, draft[LEASE_UNTIL]!);
  return moves.moveTo(slot, word, delay > 0 ? DELAYED : READY, RUNNING);
}
