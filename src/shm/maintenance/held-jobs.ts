import type { Filing } from './filing.js';
import { ENTRY_K1, ENTRY_SLOT, ENTRY_WORD } from '../memory/layout.js';
import { assertHeld } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import { ADMITTED } from '../tables/rate-limits.js';

/**
 * The rate limits under the maintenance lock (see rate-limits.ts): a claim
 * of a job whose type's window is used up holds the job instead, in the held
 * heap keyed by when the window opens, and each catch-up files back as ready
 * the held jobs whose window has opened. A queue without limits pays one
 * check per claim.
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
    const { rateLimits, slots, held } = this.#m;
    if (!rateLimits.active) return true;
    const opensAt = rateLimits.opensAt(slots.types[slot]!, now);
    if (opensAt === ADMITTED) return true;
    this.#filing.push(held, opensAt, slots.jobNums[slot]!, 0, slot, word);
    return false;
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
    return this.#filing.validTop(this.#m.held);
  }

  /** Files back as ready the held jobs whose window opened by `now`. */
  release(now: number): void {
    const { slots, held } = this.#m;
    while (held.size > 0 && held.top(ENTRY_K1) <= now) {
      const slot = held.top(ENTRY_SLOT);
      const word = held.top(ENTRY_WORD);
      held.pop();
      if (slots.word(slot) === word) this.#filing.fileReady(slot, word);
    }
  }
}
