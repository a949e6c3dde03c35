import { ATTEMPTS, LEASE_UNTIL, READY, RUNNING, STARTED_AT, TOKEN, WORKER, fieldBit } from '../memory/layout.js';
import type { Mover } from '../protocol/mover.js';

/** The fields a claim sets (see Mover#apply). */
const CLAIM_FIELDS = fieldBit(ATTEMPTS) | fieldBit(TOKEN) | fieldBit(LEASE_UNTIL) | fieldBit(STARTED_AT) | fieldBit(WORKER);

/**
 * The move *claim* (any thread, lock-free or locked): READY → RUNNING, one
 * more attempt, leased to `worker` with `token` from `startedAt` until
 * `leaseUntil`. The draft holds the lease as read from the slot while it
 * held `word` (SlotTable#readLease): only one thread moves the slot from the
 * READY word its ring entry was made for (keeps I7). `journalFields`: the mask bit of
 * MOVES when the move is counted for a journal, else 0. The new word, or -1
 * if the slot moved first. The maker (WorkerPath#tryClaim) checks the job,
 * the token and the lease's end before, and registers the lease after.
 */
export function claimJob(
  mover: Mover, slot: number, word: number, token: number, startedAt: number, leaseUntil: number, worker: number, journalFields: number,
): number {
  const draft = mover.draft;
  draft[ATTEMPTS]!++;
  draft[TOKEN] = token;
  draft[LEASE_UNTIL] = leaseUntil;
  draft[STARTED_AT] = startedAt;
  draft[WORKER] = worker;
  return mover.apply(slot, word, RUNNING, READY, CLAIM_FIELDS | journalFields);
}
