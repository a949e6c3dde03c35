import * as step from '../memory/steps.js';
import {
  INTENT_MASK, INTENT_RECORD, INTENT_SLOT, INTENT_TO, MAINTENANCE_ROW, RECORD_FIELDS, ROW_DATA, ROW_INTENT_SEQ, ROW_OWNED, ROW_REVOKED,
  ROW_STATE, ROW_WORDS, SEQ_MASK, busyRow, busySeq, isBusy,
} from '../memory/layout.js';
import { Watch, type Patience } from './patience.js';
import type { RowTable } from '../tables/rows.js';
import type { SlotTable } from '../tables/slots.js';

/** Looks at a row still inside its call before napping. */
const SPINS = 64;

/**
 * The helping protocol, in one place: how the maintenance lock holder finds
 * threads that died inside a lock-free call, and finishes what they left.
 *
 * A thread inside a lock-free call has its row's CALL odd. `quiesce` waits
 * until every owned row that is inside a call has left that call; one that
 * stays in the same call for the queue's patience (`lockTimeoutMillis`, see
 * patience.ts) of uninterrupted watching is presumed dead (a gap in the
 * watcher's own watching restarts the watch, so a stopped process does not
 * blame its threads). A rebuild then, with the gate
 * shut so that no lock-free call runs, revokes the dead rows and finishes every
 * BUSY word from the intent it names (`finish`): the intent holds every
 * field the move sets, so the move completes exactly as its owner would have made it.
 *
 * Residual risk, as for a lock holder: a live owner stalled past the timeout
 * inside a call is taken for dead (and raises the patience once it learns of
 * it, see QueueContext#prepareWorker); its own move is finished with the values
 * it was writing (harmless), but a move it *starts* after its row was revoked
 * races the others as a normal lock-free move whose row is no longer watched.
 */
export class Helping {
  readonly #rows: RowTable;
  readonly #slots: SlotTable;
  readonly #patience: Patience;

  constructor(rows: RowTable, slots: SlotTable, patience: Patience) {
    this.#rows = rows;
    this.#slots = slots;
    this.#patience = patience;
  }

  /**
   * Waits until every owned row inside a call now has left it; returns the
   * rows presumed dead instead (still inside the same call after the timeout).
   */
  quiesce(): number[] {
    const rows = this.#rows;
    const waiting: number[] = [];
    const calls: number[] = [];
    for (let row = MAINTENANCE_ROW + 1, n = rows.highWater; row < n; row++) {
      const call = rows.call(row);
      if ((call & 1) === 1 && rows.owned(row)) {
        waiting.push(row);
        calls.push(call);
      }
    }
    if (waiting.length === 0) return waiting;
    const napMillis = Math.max(0.05, Math.min(1, this.#patience.millis() / 50));
    const watch = new Watch(this.#patience, step.monotonicMillis());
    for (let spins = 0; waiting.length > 0; spins++) {
      for (let i = waiting.length - 1; i >= 0; i--) {
        if (rows.call(waiting[i]!) === calls[i]) continue;
        waiting.splice(i, 1);
        calls.splice(i, 1);
      }
      if (waiting.length === 0 || spins < SPINS) continue;
      // The rows still waited for have stayed in their calls since the watch began: none progressed.
      if (watch.look(step.monotonicMillis(), false)) return waiting;
      // Nobody notifies this word: a short sleep that leaves the cores to the threads we wait for.
      step.nap(napMillis);
    }
    return [];
  }

  /** Marks rows presumed dead: not used again (until their thread is known to have exited), so a late owner cannot reuse its intents. */
  revoke(dead: readonly number[]): void {
    // Only from OWNED: a row given back meanwhile was alive after all (keeps I19).
    for (const row of dead) step.compareExchange(this.#rows.words, row * ROW_WORDS + ROW_STATE, ROW_OWNED, ROW_REVOKED);
  }

  /**
   * Finishes the move a BUSY word names, from its owner's intent (with every
   * lock-free call held at the gate, or the owner presumed dead). Returns the
   * slot's word after it; a word that is not BUSY is returned as it is.
   */
  finish(slot: number): number {
    const slots = this.#slots;
    const word = slots.word(slot);
    if (!isBusy(word)) return word;
    const rows = this.#rows;
    const row = busyRow(word);
    const intent = row * ROW_DATA;
    const named = (step.load(rows.words, row * ROW_WORDS + ROW_INTENT_SEQ) & SEQ_MASK) === busySeq(word) && rows.data[intent + INTENT_SLOT] === slot;
    if (!named) return word; // cannot happen: an intent is rewritten only after its move is done
    // The fields the move sets, as its owner would have copied them.
    slots.write(slot, rows.data.subarray(intent + INTENT_RECORD, intent + INTENT_RECORD + RECORD_FIELDS), rows.data[intent + INTENT_MASK]!);
    const to = rows.data[intent + INTENT_TO]!;
    // Publishes the finished move, unless its owner woke and finished it meanwhile (same record either way: relies on I5).
    step.compareExchange(slots.words, slot, word, to);
    return slots.word(slot);
  }
}
