import type { JournalNotes } from '../journal/journal-notes.js';
import { assertHeld } from '../protocol/lock-held.js';
import type { Mover } from '../protocol/mover.js';
import type { QueueMemory } from '../queue-memory.js';
import { freeJob, type ChainFreer } from './evict.js';

/**
 * The move *remove* (lock holder, a flip): READY, DELAYED, SUCCEEDED, DEAD or
 * CANCELLED → FREE, the job in `slot` (its word `word`, settled, not frozen:
 * the caller checked both) gone for good, as an eviction leaves it (see
 * freeJob). A RUNNING job is never removed (its lease holder would lose its
 * job under it): the caller refuses it. Noted for the journal as a call's own
 * change (not LAZY): the call returns once the journal deletes the job, so a
 * reopen never brings it back.
 *
 * Races only lock-free claims of a READY job, by the flip's CAS from the word
 * read (I2): the claim's CAS from the same word loses, or the flip does and
 * the caller looks again (then finds it RUNNING). Entries of the ready rings,
 * the delayed, held and finished heaps stay behind, stale: they name a word the
 * slot no longer holds (keeps I3: FREE is a new version), so every pop skips
 * them, as for a cancelled job. False if the slot moved first.
 */
export function removeJob(
  memory: QueueMemory, notes: JournalNotes, mover: Mover, room: ChainFreer, record: Float64Array, slot: number, word: number,
): boolean {
  assertHeld(memory.lock);
  if (!freeJob(memory, notes, mover, room, record, slot, word, false)) return false;
  // A finished() sleeper waiting on a PENDING job is woken, and finds it gone.
  memory.finishes.announce();
  return true;
}
