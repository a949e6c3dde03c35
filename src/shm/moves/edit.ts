import { DATA_REF, DELAYED, PAYLOAD_BYTES, PRIORITY, READY, RUN_AT, WAITING, type SlotStatus } from '../memory/layout.js';
import type { JobMoves } from './job-moves.js';

/**
 * What an edit of a PENDING job changes; a field left undefined keeps its
 * value. `delay`: the job's new runAt is this long after the clock read at
 * the move (changeDelay; 0 with `earlier` is promote); `data`: its new data
 * chain, stored by the caller (see Maintenance#edit).
 */
export interface PendingEdit {
  priority?: number;
  delay?: number;
  /** With `delay`: only an earlier runAt is taken (promote leaves a job already ready as it is). */
  earlier?: boolean;
  /** The new payload's chain and its PAYLOAD_BYTES field (its length, marked if binary). */
  data?: { ref: number; payloadField: number };
}

/**
 * The move *edit* (lock holder): READY or DELAYED (`status`, its word `word`)
 * → READY or DELAYED, a PENDING job changed in place: its priority, its runAt
 * (DELAYED if in the future, else READY), its payload. One move, so a poll
 * racing it leases the job whole as it was (and the edit, finding it
 * RUNNING, is refused) or as edited (relies on I2, I4). Its old ring or heap
 * entry names the old word and is passed over from then on (relies on I3);
 * the new word is filed where its status needs it. A change of priority or
 * payload is a change of the job's content, noted so that the journal writes
 * the job whole (see JobMoves#moveTo). False if the slot moved first; true,
 * with nothing moved, for a promote of a job already ready.
 */
export function editPending(moves: JobMoves, slot: number, word: number, status: SlotStatus, edit: PendingEdit, now: number): boolean {
  const draft = moves.mover.start(slot);
  let to = status;
  if (edit.delay !== undefined) {
    const runAt = moves.freshRunAt(now, edit.delay, Infinity);
    if (!edit.earlier || runAt < draft[RUN_AT]!) {
      draft[RUN_AT] = runAt;
      // A parent waiting for its children keeps waiting: its new runAt counts once they have ended (keeps I28).
      to = edit.delay > 0 || draft[WAITING]! > 0 ? DELAYED : READY;
    } else if (edit.priority === undefined && edit.data === undefined) {
      return true;
    }
  }
  if (edit.priority !== undefined) draft[PRIORITY] = edit.priority;
  if (edit.data !== undefined) {
    draft[DATA_REF] = edit.data.ref;
    draft[PAYLOAD_BYTES] = edit.data.payloadField;
  }
  return moves.moveTo(slot, word, to, status, edit.priority !== undefined || edit.data !== undefined);
}
