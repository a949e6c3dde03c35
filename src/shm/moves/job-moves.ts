import { laterReading, type TimeSource } from '../../clock.js';
import type { RetryPolicy } from '../../policy.js';
import type { Filing } from '../maintenance/filing.js';
import type { JournalNotes } from '../journal/journal-notes.js';
import { FINISH_BASE, MOVES, type SlotStatus } from '../memory/layout.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { Mover, MoverHolder } from '../protocol/mover.js';
import type { Room } from '../maintenance/room.js';
import { Flows } from './flows.js';

/**
 * What every move the maintenance lock holder makes of a job shares (each
 * keeps I2 and I4 through Mover#apply): the parts it reads and writes, a job
 * moved with the draft as its new record (noted for the journal, then filed
 * where its status needs it), the finish order, and the runAt of a job made
 * ready again. The moves themselves are one file each beside this one
 * (place.ts, fail.ts, release.ts, cancel.ts, retry-dead.ts, edit.ts, undo.ts).
 */
export class JobMoves {
  readonly memory: QueueMemory;
  readonly policy: RetryPolicy;
  /** The queue's clock, read again as a move is made (`freshRunAt`). */
  readonly #time: TimeSource;
  /** Whether the queue has a journal: then each move counts in the record's MOVES. */
  readonly journaled: boolean;
  readonly #filing: Filing;
  readonly notes: JournalNotes;
  /** Where a new job's slot and strings come from, and an old error's chain goes back to. */
  readonly room: Room;
  readonly #holder: MoverHolder;
  /** A flow's parent's moves, made as its children end (see flows.ts). */
  readonly flows: Flows;

  constructor(
    memory: QueueMemory, policy: RetryPolicy, time: TimeSource, journaled: boolean, filing: Filing, notes: JournalNotes, room: Room, holder: MoverHolder,
  ) {
    this.memory = memory;
    this.policy = policy;
    this.#time = time;
    this.journaled = journaled;
    this.#filing = filing;
    this.notes = notes;
    this.room = room;
    this.#holder = holder;
    this.flows = new Flows(this);
  }

  /** The mover the holder's moves use now (see MoverHolder): read at each move. */
  get mover(): Mover {
    return this.#holder.mover;
  }

  /**
   * Moves `slot` from `word` (status `from`) to `status` with the draft as
   * its record, notes it for the journal, and files it; false if the slot
   * moved first (a lock-free move won the race: the caller looks again).
   * `content`: the move changes the job's priority or payload (moves/edit.ts),
   * which the journal then writes whole (see JournalNotes#noteOwnMove).
   */
  moveTo(slot: number, word: number, status: SlotStatus, from: SlotStatus, content = false): boolean {
    const draft = this.#holder.mover.draft;
    if (this.journaled) draft[MOVES]!++;
    this.notes.noteOwnMove(slot, word, status, content);
    assertHeld(this.memory.lock);
    const next = this.#holder.mover.apply(slot, word, status, from);
    if (next < 0) return false;
    this.fileDecided(slot, next, status);
    return true;
  }

  /**
   * Files the job the call's own move just placed or moved. That move is
   * decided (its CAS took the slot) and stands, whatever follows: a holder
   * taken for dead since its last look at the lock (stalled past the
   * timeout, before or after the CAS) files nothing — the rebuild of its
   * successor, or of the next holder (a taken-over holder's release marks
   * the hints stale), files the job from its slot — and its call goes on to
   * report the move it made. Thrown on, LockLost would make the call start
   * again, and be refused by its own move (a fail refused as stale once it
   * had failed the job) or make it twice (a submit). Keeps I13.
   */
  fileDecided(slot: number, word: number, status: SlotStatus): void {
    try {
      this.#filing.file(slot, word, status);
    } catch (error) {
      if (!(error instanceof LockLost)) throw error;
    }
  }

  nextFinishSeq(): number {
    // The same shared counter lock-free completes take their order from.
    return this.memory.header[FINISH_BASE]! + this.memory.finishes.count();
  }

  /**
   * The runAt of a job a call makes ready again (fail, release, retryDead):
   * `delay` after the clock read just before its move, so that a lock-free
   * claim of a later reading never comes before it with an older time — if
   * that reading is before `before` (the end of the lease a fail or release
   * needs: past it, the call took effect before the clock passed, at
   * `since`); else `delay` after `since`. Read before the decision, not
   * while the slot is BUSY: a holder that stalls in the clock there would be
   * taken over with its move finished, and then retry the call as refused.
   */
  freshRunAt(since: number, delay: number, before: number): number {
    // No claim of another thread to order against in an exclusive queue.
    if (this.memory.exclusive) return since + delay;
    const fresh = laterReading(this.#time, since);
    return (fresh < before ? fresh : since) + delay;
  }
}
