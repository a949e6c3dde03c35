import * as step from '../memory/steps.js';
import type { WordAccess } from '../memory/access.js';
import {
  ATTENTION, CAPPED, CAPS, CAP_ENTRIES, CAP_ENTRY_BASE, CAP_FIELDS, CAP_HELD, CAP_HIGH, CAP_MAX, CAP_RUNNING, GROUP_CAP_BASE, GROUP_CAP_HIGH,
} from '../memory/layout.js';

/** The entry of the whole queue's cap; entry n is the type numbered n in `typeNames`. */
export const QUEUE_CAP = 0;

/** The cap entry of the group numbered `group` (>= 1) in `groupNames`. */
export function groupCap(group: number): number {
  return GROUP_CAP_BASE + group;
}

/** Whether a cap entry is a group's. */
export function isGroupCap(entry: number): boolean {
  return entry > GROUP_CAP_BASE;
}

/** One cap as the table holds it: its entry (QUEUE_CAP or a type number) and at most `max` jobs RUNNING. */
export interface CapEntry {
  readonly entry: number;
  readonly max: number;
}

/**
 * The concurrency caps of one queue (`concurrency` in layout.ts): at most
 * CAP jobs RUNNING in the whole queue, per job type, and per group.
 *
 * Concurrency contract. CAP and CAPS are written only by the lock holder;
 * while CAPS > 0 the ATTENTION bit CAPPED sends every poll to the lock, so
 * every claim is admitted (`admits`) by one thread at a time. RUNNING is
 * counted by whoever moves a job into or out of RUNNING (`Mover#count`, an
 * Atomics add, while CAPS > 0), after the CAS that decides the move: a claim
 * counts under the lock, a lock-free complete counts down once its job has
 * left RUNNING (BUSY, on its way to SUCCEEDED). So RUNNING is never below
 * the jobs RUNNING, and a claim admitted while RUNNING < CAP keeps the cap
 * exact. The counts are a hint (I1): a rebuild, which runs with the gate
 * shut and no lock-free call in flight, derives them again from the slots,
 * and so does setting the first cap (see Maintenance#setConcurrency). A
 * queue without caps pays one load of CAPS per move into or out of RUNNING
 * (an Atomics load once shared, a plain one while exclusive).
 */
export class ConcurrencyTable {
  readonly #words: Int32Array;
  readonly #lockWords: Int32Array;
  readonly #access: WordAccess;

  constructor(words: Int32Array, lockWords: Int32Array, access: WordAccess) {
    this.#words = words;
    this.#lockWords = lockWords;
    this.#access = access;
  }

  /**
   * Whether any cap is set: the movers' one load (pairs with the store in `set`, made before the rebuild that
   * recounts); a plain read while the queue is exclusive, where the same thread set it.
   */
  get active(): boolean {
    return this.#access.load(this.#words, CAPS) > 0;
  }

  /** The cap of `entry`, 0 for none. */
  capOf(entry: number): number {
    return this.#words[at(entry) + CAP_MAX]!;
  }

  /** Jobs of `entry` counted RUNNING. */
  runningOf(entry: number): number {
    return step.load(this.#words, at(entry) + CAP_RUNNING);
  }

  /**
   * Sets (max > 0) or removes (max 0) the cap of `entry`, under the lock.
   * Returns true if this is the first cap: the caller must then derive the
   * counts from the slots with no lock-free call in flight (a rebuild).
   */
  set(entry: number, max: number): boolean {
    const words = this.#words;
    const base = at(entry);
    const had = words[base + CAP_MAX]! > 0;
    const before = words[CAPS]!;
    const count = before + (max > 0 ? 1 : 0) - (had ? 1 : 0);
    words[base + CAP_MAX] = max;
    this.#coverEntry(entry);
    this.#publishCount(count);
    return before === 0 && count > 0;
  }

  /** The highest capped entries of its kind (type or group) reach `entry`: the scans up to them see it. */
  #coverEntry(entry: number): void {
    const words = this.#words;
    const high = isGroupCap(entry) ? GROUP_CAP_HIGH : CAP_HIGH;
    if (entry >= words[high]!) words[high] = entry + 1;
  }

  /** Publishes the number of caps set: CAPS first, then the bit every poll reads before it claims. */
  #publishCount(count: number): void {
    // Seen by every mover from the next move on (its one load of CAPS).
    step.store(this.#words, CAPS, count);
    // Every poll from now on takes the lock while a cap exists (a poll reads ATTENTION before it claims).
    if (count > 0) step.or(this.#lockWords, ATTENTION, CAPPED);
    else step.and(this.#lockWords, ATTENTION, ~CAPPED);
  }

  /**
   * Whether a cap that holds jobs back has room again, so that they may be
   * filed back: O(CAP_HIGH + GROUP_CAP_HIGH - GROUP_CAP_BASE), the entries up to the highest capped type and group.
   */
  heldHaveRoom(): boolean {
    const words = this.#words;
    for (let entry = 0, high = words[CAP_HIGH]!; entry < high; entry++) {
      if (words[at(entry) + CAP_HELD]! > 0 && this.#roomIn(entry)) return true;
    }
    for (let entry = GROUP_CAP_BASE, high = words[GROUP_CAP_HIGH]!; entry < high; entry++) {
      if (words[at(entry) + CAP_HELD]! > 0 && this.#roomIn(entry)) return true;
    }
    return false;
  }

  /** Counts a job held back for the cap of `entry` (see blocking). */
  held(entry: number): void {
    this.#words[at(entry) + CAP_HELD]!++;
  }

  /** Forgets every held count: the held jobs were filed back as ready (a release, or a rebuild). */
  clearHeld(): void {
    const words = this.#words;
    for (let entry = 0, high = words[CAP_HIGH]!; entry < high; entry++) words[at(entry) + CAP_HELD] = 0;
    for (let entry = GROUP_CAP_BASE, high = words[GROUP_CAP_HIGH]!; entry < high; entry++) words[at(entry) + CAP_HELD] = 0;
  }

  /** The entry that keeps a job of `typeNumber` and `group` (0: none) from its claim now: QUEUE_CAP, the type's or the group's; -1 if none. */
  blocking(typeNumber: number, group: number): number {
    if (!this.#roomIn(QUEUE_CAP)) return QUEUE_CAP;
    if (typeNumber > 0 && !this.#roomIn(typeNumber)) return typeNumber;
    return group > 0 && !this.#roomIn(groupCap(group)) ? groupCap(group) : -1;
  }

  /** Counts a job of `typeNumber` and `group` (0: none) into (+1) or out of (-1) RUNNING. */
  moved(typeNumber: number, group: number, delta: number): void {
    const words = this.#words;
    // Atomic adds: a lock-free complete counts down while the holder counts a claim up.
    step.add(words, at(QUEUE_CAP) + CAP_RUNNING, delta);
    if (typeNumber > 0) step.add(words, at(typeNumber) + CAP_RUNNING, delta);
    if (group > 0) step.add(words, at(groupCap(group)) + CAP_RUNNING, delta);
  }

  /** Sets every RUNNING count to the slots' (a rebuild's scan: `running` per type number and per group cap entry, `total` the queue's). */
  recount(running: ReadonlyMap<number, number>, total: number): void {
    const words = this.#words;
    for (let entry = 0; entry < CAP_ENTRIES; entry++) words[at(entry) + CAP_RUNNING] = 0;
    for (const [entry, count] of running) if (entry > 0) words[at(entry) + CAP_RUNNING] = count;
    step.store(words, at(QUEUE_CAP) + CAP_RUNNING, total);
  }

  /**
   * Makes CAPS, the highest capped entries and the CAPPED bit agree with the
   * caps' MAX words again (a rebuild's, with the gate shut): a holder that
   * died inside `set` may have written a cap's MAX and not the rest, and a
   * cap listed while CAPPED is clear is one the lock-free polls claim past
   * (keeps I25).
   */
  resync(): void {
    let count = 0;
    for (let entry = 0; entry < CAP_ENTRIES; entry++) {
      if (this.#words[at(entry) + CAP_MAX]! === 0) continue;
      count++;
      this.#coverEntry(entry);
    }
    this.#publishCount(count);
  }

  /** Every cap, the queue's first, then the types' in the order they were first seen, then the groups' likewise. */
  list(): CapEntry[] {
    const caps: CapEntry[] = [];
    const words = this.#words;
    for (let entry = 0; entry < CAP_ENTRIES && caps.length < words[CAPS]!; entry++) {
      const max = words[at(entry) + CAP_MAX]!;
      if (max > 0) caps.push({ entry, max });
    }
    return caps;
  }

  #roomIn(entry: number): boolean {
    const base = at(entry);
    const max = this.#words[base + CAP_MAX]!;
    return max === 0 || step.load(this.#words, base + CAP_RUNNING) < max;
  }
}

function at(entry: number): number {
  return CAP_ENTRY_BASE + entry * CAP_FIELDS;
}
