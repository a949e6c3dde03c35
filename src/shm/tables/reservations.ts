import type { WordAccess } from '../memory/access.js';
import {
  RESERVATIONS, RESERVATION_BYTES, RESERVATION_FIELDS, RESERVATION_HEAD, RESERVATION_HEADER, RESERVATION_LIVE, RESERVATION_ROW, RESERVATION_SEQ,
  RESERVATION_STAMP, RESERVATION_THREAD,
} from '../memory/layout.js';

/** What `add` answers when every entry is in use. */
export const NO_ENTRY = -1;

/** One entry as `forEach` hands it out. */
export interface ReservationEntry {
  entry: number;
  stamp: number;
  head: number;
  bytes: number;
  row: number;
  thread: number;
}

/**
 * The arena runs reserved for producers to fill in place (see RESERVATIONS in
 * layout.ts): a bounded table of entries, each naming a run that belongs to
 * no slot yet, the payload length it was reserved for, and who reserved it.
 * It is what a rebuild keeps of chunks no slot references (I30).
 *
 * Concurrency contract: the lock holder alone adds, reads and frees entries;
 * an entry's STAMP is cleared by CAS from the stamp its remover read, so a
 * holder taken for dead that clears its own adopted entry late clears
 * nothing if the entry was freed and given to another reservation since
 * (stamps count up and are not reused: after 2^31 − 1 of them they start at
 * 1 again, far beyond any stall). An entry is published by the Atomics
 * store of SEQ after its fields, which a scan loads first; then the holder
 * reads the entries plainly (an Int32 read does not tear), so a rebuild's
 * scan adds one step for the scheduler, not one per entry. A stamp a stale
 * holder clears meanwhile was its own adopted entry, which the scan drops
 * either way (see Rebuilder#keepReserved). LIVE is a hint, counted again by
 * every rebuild.
 */
export class ReservationTable {
  readonly #words: Int32Array;
  readonly #access: WordAccess;

  constructor(buffer: SharedArrayBuffer, access: WordAccess) {
    this.#words = new Int32Array(buffer);
    this.#access = access;
  }

  /** Entries in use. */
  get live(): number {
    return this.#words[RESERVATION_LIVE]!;
  }

  /** Records a reserved run; the entry, or NO_ENTRY if the table is full (then nothing changed). */
  add(head: number, bytes: number, row: number, thread: number): number {
    const words = this.#words;
    if (words[RESERVATION_LIVE]! >= RESERVATIONS) return NO_ENTRY;
    for (let entry = 0; entry < RESERVATIONS; entry++) {
      const at = RESERVATION_HEADER + entry * RESERVATION_FIELDS;
      if (words[at + RESERVATION_STAMP] !== 0) continue;
      const stamp = (words[RESERVATION_SEQ]! % 0x7fff_ffff) + 1;
      words[at + RESERVATION_HEAD] = head;
      words[at + RESERVATION_BYTES] = bytes;
      words[at + RESERVATION_ROW] = row;
      words[at + RESERVATION_THREAD] = thread;
      words[at + RESERVATION_STAMP] = stamp;
      // Publishes the entry (pairs with the load of SEQ in `forEach`): stored in order before the reserver's look at
      // the lock after it (ReservedBytes#reserve), so a taker whose takeover comes after that look sees the entry.
      this.#access.store(words, RESERVATION_SEQ, stamp);
      words[RESERVATION_LIVE]!++;
      return entry;
    }
    return NO_ENTRY;
  }

  stampOf(entry: number): number {
    return this.#words[RESERVATION_HEADER + entry * RESERVATION_FIELDS + RESERVATION_STAMP]!;
  }

  headOf(entry: number): number {
    return this.#words[RESERVATION_HEADER + entry * RESERVATION_FIELDS + RESERVATION_HEAD]!;
  }

  /** Whether `entry` still holds the reservation stamped `stamp` (not freed, nor given to another since). */
  holds(entry: number, stamp: number): boolean {
    return this.stampOf(entry) === stamp;
  }

  /** Frees `entry` if it still holds `stamp` (a CAS: see the class doc); whether it did. Its run is the caller's to free or keep. */
  remove(entry: number, stamp: number): boolean {
    const at = RESERVATION_HEADER + entry * RESERVATION_FIELDS + RESERVATION_STAMP;
    // The one write a holder taken for dead may make late (its adopted entry): from its own stamp only.
    if (this.#access.compareExchange(this.#words, at, stamp, 0) !== stamp) return false;
    this.#words[RESERVATION_LIVE]!--;
    return true;
  }

  /** Calls `visit` with each entry in use. */
  forEach(visit: (entry: ReservationEntry) => void): void {
    const words = this.#words;
    // One load that orders every entry published before it (pairs with the store of SEQ in `add`); the entries then plainly.
    this.#access.load(words, RESERVATION_SEQ);
    for (let entry = 0; entry < RESERVATIONS; entry++) {
      const at = RESERVATION_HEADER + entry * RESERVATION_FIELDS;
      const stamp = words[at + RESERVATION_STAMP]!;
      if (stamp === 0) continue;
      visit({
        entry, stamp, head: words[at + RESERVATION_HEAD]!, bytes: words[at + RESERVATION_BYTES]!, row: words[at + RESERVATION_ROW]!, thread: words[at + RESERVATION_THREAD]!,
      });
    }
  }

  /** Counts the entries in use again (a rebuild's: a holder that died between a stamp and its count left LIVE off by one). */
  recount(): void {
    let live = 0;
    this.forEach(() => void live++);
    this.#words[RESERVATION_LIVE] = live;
  }
}
