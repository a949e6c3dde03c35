import { LEASE_UNTIL, PROGRESS, PROGRESS_TOKEN, RUNNING, fieldBit } from '../memory/layout.js';
import { NOT_COUNTED, type Mover } from '../protocol/mover.js';

/** The fields a progress report sets: the value, and the lease it belongs to. */
const PROGRESS_FIELDS = fieldBit(PROGRESS) | fieldBit(PROGRESS_TOKEN);

/**
 * The move *progress* (the lease holder, lock-free or locked): RUNNING →
 * RUNNING, the job's latest progress now `value`, reported under the lease
 * `token`; the lease's end stays as it is, and no count changes. `word` is
 * the RUNNING word whose TOKEN is `token` (WorkerPath#leasedWord, keeps I7).
 * The lease's end goes into the draft too (not the mask): the new word
 * needs a new lease ring entry (I3), which is read from the draft. The new
 * word, or -1 if the slot moved first.
 */
export function reportProgress(mover: Mover, slot: number, word: number, token: number, value: number, leaseUntil: number, journalFields: number): number {
  const draft = mover.draft;
  draft[PROGRESS] = value;
  draft[PROGRESS_TOKEN] = token;
  draft[LEASE_UNTIL] = leaseUntil;
  return mover.apply(slot, word, RUNNING, NOT_COUNTED, PROGRESS_FIELDS | journalFields);
}
