import {
  ATTEMPTS, ATTEMPT_LIMIT, DEAD, DIED_AT, DELAYED, ERROR_BYTES, ERROR_LEASE_EXPIRED, ERROR_REF, LEASE_UNTIL, READY, RUNNING, RUN_AT, TYPE, attemptLimit, mayRetry,
} from '../memory/layout.js';
import { noteFinish, waitOf } from '../records.js';
import { MoveEvent, noteMove } from '../move-events.js';
import type { JobMoves } from './job-moves.js';

/**
 * The move *fail*, and *expiry* (lock holder): RUNNING → READY, DELAYED
 * (after the backoff) or DEAD (no attempts left, or a permanent failure),
 * a failed attempt with its lastError. A fail call stamps it now; an expiry
 * at the lease's end. Each returns false if the slot moved first.
 */

/**
 * A fail call's failed attempt, now: its retry time comes from the clock
 * read as the move is made (see JobMoves#freshRunAt). `permanent` dead-letters
 * the job whatever attempts are left. `errorRef` is the lastError's chain
 * (or a canned error), of `errorBytes`.
 */
export function failNow(moves: JobMoves, slot: number, word: number, errorRef: number, errorBytes: number, now: number, permanent: boolean): boolean {
  return failAttempt(moves, slot, word, now, errorRef, errorBytes, now, permanent, STAMPED_NOW);
}

/** The expiry of a lease that ran out at `leaseUntil`: a failed attempt at that time, seen at `now`. */
export function expireLease(moves: JobMoves, slot: number, word: number, leaseUntil: number, now: number): boolean {
  return failAttempt(moves, slot, word, leaseUntil, ERROR_LEASE_EXPIRED, 0, now, !PERMANENT, !STAMPED_NOW);
}

const PERMANENT = true;
/** The attempt failed now (a fail call), not at a time already past (an expiry's leaseUntil). */
const STAMPED_NOW = true;

/**
 * A failed attempt at `failedAt`: PENDING after the backoff, or DEAD when
 * no attempts are left (or `permanent`). `stamped`: `failedAt` is now, and
 * the retry time then comes from the clock read as the move is made.
 */
function failAttempt(
  moves: JobMoves, slot: number, word: number, failedAt: number, errorRef: number, errorBytes: number, now: number, permanent: boolean, stamped: boolean,
): boolean {
  const { memory, policy } = moves;
  const draft = moves.mover.start(slot);
  const attempts = draft[ATTEMPTS]!;
  // Its lease's wait, for its event, before a retry moves RUN_AT.
  const waited = waitOf(draft);
  const oldError = draft[ERROR_REF]!;
  draft[ERROR_REF] = errorRef;
  draft[ERROR_BYTES] = errorBytes;
  // Its attempts were its own, or its type's policy's, from its submit (see Maintenance#submit); its backoff is its type's now.
  const retry = !permanent && mayRetry(attempts, attemptLimit(draft[ATTEMPT_LIMIT]!, policy.maxAttempts));
  const backoff = retry ? memory.retryPolicies.of(draft[TYPE]!, policy).backoffAfter(attempts) : 0;
  if (retry) draft[RUN_AT] = failedAt + backoff;
  const status = retry ? (draft[RUN_AT]! <= now ? READY : DELAYED) : DEAD;
  if (status === DEAD) {
    noteFinish(draft, failedAt);
    draft[DIED_AT] = failedAt;
  }
  // READY or DELAYED by the backoff alone (failedAt is now): the same with the fresh reading.
  if (retry && stamped) draft[RUN_AT] = moves.freshRunAt(failedAt, backoff, draft[LEASE_UNTIL]!);
  // A finish too (see protocol/finishes.ts): counted before the move, announced after it.
  if (status === DEAD) memory.finishes.count();
  if (!moves.moveTo(slot, word, status, RUNNING)) return false;
  noteMove(memory, status === DEAD ? MoveEvent.Dead : MoveEvent.Retrying, draft, failedAt, !stamped, waited);
  if (status === DEAD) memory.finishes.announce();
  // Freed only after the move: a move that lost its race keeps its old error. Only the holder frees: one taken
  // over leaves the chain to its successor's rebuild, which frees every chain no slot points at.
  if (memory.lock.held()) moves.room.freeCounted(oldError);
  // Last: the parent's move takes the mover's draft (keeps I28).
  if (status === DEAD) moves.flows.childEnded(slot, DEAD, now);
  return true;
}
