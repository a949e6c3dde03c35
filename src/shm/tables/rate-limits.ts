import * as step from '../memory/steps.js';
import {
  ATTENTION, LIMIT_MAX, LIMIT_USED, LIMIT_WINDOW, LIMIT_WINDOW_START, RATE_LIMITED, RATE_LIMIT_COUNT, RATE_LIMIT_FIELDS, TYPE_NAME_COUNT,
} from '../memory/layout.js';

/** One type's limit as the table holds it: its `typeNames` number, and at most `max` leases per window of `windowMillis`. */
export interface TypeLimit {
  readonly typeNumber: number;
  readonly max: number;
  readonly windowMillis: number;
}

/** What `opensAt` returns for a claim the type's limit allows now. */
export const ADMITTED = -1;

/**
 * The rate limits of one queue's job types, in shared memory (`rateLimits`
 * in layout.ts): per type, its limit and the count of the current window.
 * Windows are fixed and aligned to the queue's clock: the one of `now`
 * starts at floor(now / window) * window, and at most `max` leases start in
 * it.
 *
 * Concurrency contract: read and written only by the maintenance lock
 * holder, so a window's count is exact however many threads poll. The one
 * word other threads read is ATTENTION's RATE_LIMITED bit: set while any
 * type has a limit, it sends every poll to the lock (complete and extend
 * stay lock-free). A queue without limits never reads this table.
 */
export class RateLimitTable {
  readonly #table: Float64Array;
  readonly #header: Float64Array;
  readonly #lockWords: Int32Array;

  constructor(table: Float64Array, header: Float64Array, lockWords: Int32Array) {
    this.#table = table;
    this.#header = header;
    this.#lockWords = lockWords;
  }

  /** Whether any type has a limit (the lock holder's view; other threads read RATE_LIMITED). */
  get active(): boolean {
    return this.#header[RATE_LIMIT_COUNT]! > 0;
  }

  /**
   * Sets (max > 0) or removes (max 0) the limit of the type numbered
   * `typeNumber` (its `typeNames` number). A changed limit keeps the
   * current window's count; a new one counts from now (leases of a type
   * without a limit are not counted).
   */
  set(typeNumber: number, max: number, windowMillis: number): void {
    const at = (typeNumber - 1) * RATE_LIMIT_FIELDS;
    const table = this.#table;
    const had = table[at + LIMIT_MAX]! > 0;
    // The window before the max: a holder that dies in between leaves no limit without its window (see resync).
    if (max > 0) table[at + LIMIT_WINDOW] = windowMillis;
    table[at + LIMIT_MAX] = max;
    if (max === 0) {
      table[at + LIMIT_WINDOW] = 0;
      table[at + LIMIT_USED] = 0;
    }
    this.#publishCount(this.#header[RATE_LIMIT_COUNT]! + (max > 0 ? 1 : 0) - (had ? 1 : 0));
  }

  /** Publishes the number of limits set: the count first, then the bit every poll reads before it claims. */
  #publishCount(count: number): void {
    this.#header[RATE_LIMIT_COUNT] = count;
    // Every poll from now on takes the lock while a limit exists; the caller then waits out lock-free polls in flight.
    if (count > 0) step.or(this.#lockWords, ATTENTION, RATE_LIMITED);
    else step.and(this.#lockWords, ATTENTION, ~RATE_LIMITED);
  }

  /**
   * Makes RATE_LIMIT_COUNT and the RATE_LIMITED bit agree with the limits'
   * max fields again (a rebuild's, with the gate shut): a holder that died
   * inside `set` may have written a limit and not the rest, and a limit
   * listed while RATE_LIMITED is clear is one the lock-free polls claim past.
   */
  resync(): void {
    const table = this.#table;
    let count = 0;
    for (let typeNumber = 1, names = this.#header[TYPE_NAME_COUNT]!; typeNumber <= names; typeNumber++) {
      if (table[(typeNumber - 1) * RATE_LIMIT_FIELDS + LIMIT_MAX]! > 0) count++;
    }
    this.#publishCount(count);
  }

  /**
   * For a claim at `now` of a job whose TYPE column holds `typeNumber`:
   * ADMITTED if its type's limit lets another lease start now (or it has
   * none), else when the type's next window opens. Moves the type's count to
   * the window of `now` (a clock gone back keeps counting the later window).
   */
  opensAt(typeNumber: number, now: number): number {
    if (typeNumber <= 0) return ADMITTED;
    const at = (typeNumber - 1) * RATE_LIMIT_FIELDS;
    const table = this.#table;
    const max = table[at + LIMIT_MAX]!;
    if (max === 0) return ADMITTED;
    const window = table[at + LIMIT_WINDOW]!;
    const start = windowStart(now, window);
    if (start > table[at + LIMIT_WINDOW_START]! || table[at + LIMIT_USED] === 0) {
      table[at + LIMIT_WINDOW_START] = start;
      table[at + LIMIT_USED] = 0;
    }
    return table[at + LIMIT_USED]! < max ? ADMITTED : table[at + LIMIT_WINDOW_START]! + window;
  }

  /** Counts a lease of a job of `typeNumber` that `opensAt` admitted. */
  counted(typeNumber: number): void {
    if (typeNumber <= 0) return;
    const at = (typeNumber - 1) * RATE_LIMIT_FIELDS;
    if (this.#table[at + LIMIT_MAX]! > 0) this.#table[at + LIMIT_USED]!++;
  }

  /** Takes back a lease `counted` counted at `at`, whose move was undone: if its window is still the type's current one. */
  uncounted(typeNumber: number, at: number): void {
    if (typeNumber <= 0) return;
    const base = (typeNumber - 1) * RATE_LIMIT_FIELDS;
    const table = this.#table;
    const window = table[base + LIMIT_WINDOW]!;
    if (table[base + LIMIT_MAX]! > 0 && table[base + LIMIT_USED]! > 0 && table[base + LIMIT_WINDOW_START] === windowStart(at, window)) {
      table[base + LIMIT_USED]!--;
    }
  }

  /** Every limit, in the order the types were first seen. */
  list(): TypeLimit[] {
    const limits: TypeLimit[] = [];
    const table = this.#table;
    for (let typeNumber = 1, count = this.#header[TYPE_NAME_COUNT]!; typeNumber <= count && limits.length < this.#header[RATE_LIMIT_COUNT]!; typeNumber++) {
      const at = (typeNumber - 1) * RATE_LIMIT_FIELDS;
      if (table[at + LIMIT_MAX]! > 0) limits.push({ typeNumber, max: table[at + LIMIT_MAX]!, windowMillis: table[at + LIMIT_WINDOW]! });
    }
    return limits;
  }
}

/** The start of the fixed window of `windowMillis` that holds `time`: windows are aligned to the clock. */
function windowStart(time: number, windowMillis: number): number {
  return Math.floor(time / windowMillis) * windowMillis;
}
