import * as step from '../memory/steps.js';
import { CANCELLED, DEAD, DELAYED, JOB_NUM, PAUSED, WAITING_PARENTS, READY, ROW_COUNTS, RUNNING, SLOT_HIGH_WATER, STATUS_COUNT, SUCCEEDED } from '../memory/layout.js';
import type { Filing } from './filing.js';
import { showProgress } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { QueueStats } from '../../types.js';

/**
 * What the read calls (stats, the dead letters, the listing) read under the
 * maintenance lock, after the caller settled the queue: the status counts,
 * the slots of DEAD jobs, and the listing made exact. No job moves.
 */
export class LockedReads {
  readonly #m: QueueMemory;
  /** Drains the rows' rings, so that the listing files every lock-free move. */
  readonly #filing: Filing;
  readonly #seen = new Float64Array(STATUS_COUNT);
  readonly #again = new Float64Array(STATUS_COUNT);
  /** `showProgress`, as a callback made once. */
  readonly #showProgress = (step: number): void => showProgress(this.#m.lock, step);

  constructor(memory: QueueMemory, filing: Filing) {
    this.#m = memory;
    this.#filing = filing;
  }

  /**
   * Makes the listing exact for every move made so far (see ListingIndex):
   * built on the first call, O(slots); after that, the ring entries of the
   * lock-free moves since the last drain are filed.
   */
  prepareListing(): void {
    const { listing, header } = this.#m;
    if (!listing.built) listing.build(header[SLOT_HIGH_WATER]!, this.#showProgress);
    this.#filing.drainLeases();
    this.#filing.drainFinished();
  }

  /** Slots of every DEAD job, in submission order. */
  deadSlots(): number[] {
    const { header, slots } = this.#m;
    const dead: number[] = [];
    for (let slot = 0; slot < header[SLOT_HIGH_WATER]!; slot++) {
      showProgress(this.#m.lock, slot);
      if (slots.status(slot) === DEAD) dead.push(slot);
    }
    return dead.sort((a, b) => slots.get(a, JOB_NUM) - slots.get(b, JOB_NUM));
  }

  /**
   * The sums of every row's counters: exact when no call is in flight. While
   * lock-free calls move jobs, the sums are read again until two reads agree
   * (a few tries), and none is shown below zero.
   */
  stats(): QueueStats {
    const seen = this.#seen;
    const again = this.#again;
    this.#sums(seen);
    for (let tries = 0; tries < 8; tries++) {
      this.#sums(again);
      let same = true;
      for (let s = 0; s < STATUS_COUNT; s++) if (again[s] !== seen[s]) same = false;
      seen.set(again);
      if (same) break;
    }
    const count = (status: number) => Math.max(0, seen[status]!);
    return {
      pending: count(READY) + count(DELAYED), ready: count(READY), delayed: count(DELAYED), running: count(RUNNING),
      succeeded: count(SUCCEEDED), dead: count(DEAD), cancelled: count(CANCELLED),
      // As set by the latest pause or resume of any thread.
      paused: step.load(this.#m.lockWords, PAUSED) === 1,
      // Only once the queue has flows: a queue without them shows the fields it always had.
      ...(this.#m.flows ? { waitingChildren: this.#m.header[WAITING_PARENTS]! } : {}),
    };
  }

  #sums(into: Float64Array): void {
    const rows = this.#m.rows;
    for (let s = 0; s < STATUS_COUNT; s++) into[s] = rows.sum(ROW_COUNTS + s);
  }
}
