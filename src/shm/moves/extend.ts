import { LEASE_UNTIL, RUNNING, fieldBit } from '../memory/layout.js';
import { NOT_COUNTED, type Mover } from '../protocol/mover.js';

const LEASE_UNTIL_BIT = fieldBit(LEASE_UNTIL);

/**
 * The move *extend* (the lease holder, lock-free or locked): RUNNING →
 * RUNNING, the lease now ending at `leaseUntil`; the job stays in its
 * status, so no count changes. `word` is the RUNNING word whose TOKEN is
 * the caller's (WorkerPath#leasedWord, keeps I7). `journalFields`: the mask
 * bit of MOVES when counted for a journal, else 0. The new word, or -1 if
 * the slot moved first.
 */
export function extendLease(mover: Mover, slot: number, word: number, leaseUntil: number, journalFields: number): number {
  mover.draft[LEASE_UNTIL] = leaseUntil;
  return mover.apply(slot, word, RUNNING, NOT_COUNTED, LEASE_UNTIL_BIT | journalFields);
}
