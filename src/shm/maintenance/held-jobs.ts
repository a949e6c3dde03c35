import type { Filing } from './filing.js';
import { ENTRY_K1, ENTRY_K3, ENTRY_SLOT, ENTRY_WORD } from '../memory/layout.js';
import { assertHeld } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import { QUEUE_CAP } from '../tables/concurrency.js';
import { ADMITTED } from '../tables/rate-limits.js';

/** The held heap's key of a job held for a concurrency cap: after every window, filed back only when its cap has room (see releaseCapped). */
const CAP_HELD_UNTIL = Number.MAX_VALUE;

/**
 * The rate limits under the maintenance lock (see rate-limits.ts): a claim
 * of a job whose type's window is used up holds the job instead, in the held
 * heap keyed by when the window opens, and each catch-up files back as ready
 * the held jobs whose window has opened. A queue without limits pays one
 * check per claim.
 *
 * The concurrency caps (see concurrency.ts) hold jobs here too, keyed after
 * every window: a claim of a job whose type's cap is reached holds it, and
 * the first locked poll that finds a cap with held jobs below its cap files
 * every held job back (`releaseCapped`). Cost: O(h log h) for h held jobs,
 * once per slot freed under a cap that holds jobs, not per poll; a poll while
 * the queue's own cap is reached claims nothing and holds nothing.
 */
export class HeldJobs {
  readonly #m: QueueMemory;
  readonly #filing: Filing;

  constructor(memory: QueueMemory, filing: Filing) {
    this.#m = memory;
    this.#filing = filing;
  }

  /** For a claim under the lock: whether the job's type's limit admits it at `now`; if not, it is held until its window opens. */
  admits(slot: number, word: number, now: number): boolean {
    const { rateLimits, concurrency, slots, held, turns } = this.#m;
    // Admitted only below every cap the job falls under (keeps I25, with the counts of Mover#count).
    if (concurrency.active) {
      const entry = concurrency.blocking(slots.types[slot]!, slots.groups[slot]!);
      if (entry >= 0) {
        // K3: the job's turn, while groups take turns (0 otherwise): filed back with it, its place in the round kept (keeps I27).
        this.#filing.push(held, CAP_HELD_UNTIL, slots.jobNums[slot]!, turns.offered, slot, word);
        concurrency.held(entry);
        return false;
      }
    }
    if (!rateLimits.active) return true;
    const opensAt = rateLimits.opensAt(slots.types[slot]!, now);
    if (opensAt === ADMITTED) return true;
    this.#filing.push(held, opensAt, slots.jobNums[slot]!, turns.offered, slot, word);
    return false;
  }

  /**
   * Before a locked poll: false if the queue's own cap is reached (the poll
   * claims nothing); else true, every held job filed back first if a cap
   * that holds jobs has room again (the poll holds again those still capped).
   */
  mayClaim(): boolean {
    const { concurrency } = this.#m;
    if (!concurrency.active) return true;
    if (concurrency.blocking(0, 0) === QUEUE_CAP) return false;
    if (concurrency.heldHaveRoom()) this.release(Infinity);
    return true;
  }

  /** Sets (max > 0) or removes (max 0) the concurrency cap of `entry` (QUEUE_CAP or a type number), every held job filed back first; true if it is the first cap. */
  setCap(entry: number, max: number): boolean {
    assertHeld(this.#m.lock);
    this.release(Infinity);
    return this.#m.concurrency.set(entry, max);
  }

  /** Counts the lease just made of the job in `slot` against its type's limit. */
  leased(slot: number): void {
    const { rateLimits, slots } = this.#m;
    if (rateLimits.active) rateLimits.counted(slots.types[slot]!);
  }

  /** Sets (max > 0) or removes (max 0) a type's limit, every held job filed back as ready first. */
  setLimit(typeNumber: number, max: number, windowMillis: number): void {
    assertHeld(this.#m.lock);
    // Filed back first: once the last limit is gone, lock-free polls find them in the rings.
    this.release(Infinity);
    this.#m.rateLimits.set(typeNumber, max, windowMillis);
  }

  /** When the first held job's window opens; Infinity if none is held. */
  heldUntil(): number {
    const until = this.#filing.validTop(this.#m.held);
    // Held for a cap: no time opens it, a finished job does.
    return until >= CAP_HELD_UNTIL ? Infinity : until;
  }

  /** Files back as ready the held jobs whose window opened by `now`. */
  release(now: number): void {
    const { slots, held } = this.#m;
    while (held.size > 0 && held.top(ENTRY_K1) <= now) {
      const slot = held.top(ENTRY_SLOT);
      const word = held.top(ENTRY_WORD);
      const turn = held.top(ENTRY_K3);
      held.pop();
      if (slots.word(slot) === word) this.#filing.fileReady(slot, word, turn);
    }
    if (now === Infinity) this.#m.concurrency.clearHeld();
  }
}
