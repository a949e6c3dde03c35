import * as step from '../memory/steps.js';
import { threadId } from 'node:worker_threads';
import type { WordAccess } from '../memory/access.js';
import { elementsIn, growTo } from '../memory/growth.js';
import {
  ATTENTION, GATE, MAINTENANCE_ROW, ROWS, ROW_CALL, ROW_COUNTS, ROW_DATA, ROW_FINISHED_CHUNKS, ROW_FINISH_DRAINED, ROW_FINISH_TAIL,
  ROW_HIGH_WATER, ROW_LEASE_DRAINED, ROW_LEASE_TAIL, ROW_OWNED, ROW_REVOKED, ROW_RINGS, ROW_RING_ENTRIES, ROW_STATE, ROW_THREAD, ROW_WORDS,
  RING_ENTRY_FIELDS, RING_ENTRY_SLOT, RING_ENTRY_WORD, RING_KEY, STATUS_COUNT, FINISH_RING, LEASE_RING,
} from '../memory/layout.js';


/** What `acquire` answers when every row is owned or revoked. */
export const NO_ROW = -1;
/** Which of a row's two rings: leases to expire, or finished jobs to evict. */
export type RingKind = typeof LEASE_RING | typeof FINISH_RING;
/** A ring's tail and drained words in its row (a test, not a lookup: this runs on every claim and complete). */
function tailOf(ring: RingKind): number {
  return ring === LEASE_RING ? ROW_LEASE_TAIL : ROW_FINISH_TAIL;
}
function drainedOf(ring: RingKind): number {
  return ring === LEASE_RING ? ROW_LEASE_DRAINED : ROW_FINISH_DRAINED;
}

/**
 * The per-thread rows (see layout.ts): each written by its owner only, read
 * by the maintenance holder, so the worker path never writes a word that
 * another thread writes too (beyond the slot words it races on).
 *
 * Concurrency contract: a row's CALL, counters and ring tails are the
 * owner's; its ring `drained` positions are the lock holder's. Ring
 * positions count up forever (taken modulo the ring size); an entry counts
 * once the tail covers it, so a thread killed mid-append leaves an entry
 * nobody reads.
 */
export class RowTable {
  readonly words: Int32Array;
  readonly data: Float64Array;
  readonly #ringBuffer: SharedArrayBuffer;
  /** This thread's view of the rows' rings: fixed-length, re-made to cover the rows it meets (see growth.ts and #reachRows). */
  #rings: Float64Array;
  readonly #header: Float64Array;
  readonly #lockWords: Int32Array;
  readonly #access: WordAccess;

  /** `rings`: growable, by a row's rings at a time as rows are first owned (see acquire). */
  constructor(words: Int32Array, data: Float64Array, rings: SharedArrayBuffer, header: Float64Array, lockWords: Int32Array, access: WordAccess) {
    this.words = words;
    this.data = data;
    this.#ringBuffer = rings;
    this.#rings = RowTable.#ringView(rings);
    this.#header = header;
    this.#lockWords = lockWords;
    this.#access = access;
  }

  static #ringView(buffer: SharedArrayBuffer): Float64Array {
    return new Float64Array(buffer, 0, elementsIn(buffer, ROW_RINGS * Float64Array.BYTES_PER_ELEMENT) * ROW_RINGS);
  }

  /** The rings of rows below `rows`, in this thread's view: re-made if short (their rings were grown before the rows were owned). */
  #ringsOf(rows: number): Float64Array {
    if (rows * ROW_RINGS > this.#rings.length) this.#rings = RowTable.#ringView(this.#ringBuffer);
    return this.#rings;
  }

  /** Rows ever owned: the ones whose counters and rings count. */
  get highWater(): number {
    return Math.max(1, this.#header[ROW_HIGH_WATER]!);
  }

  /** Takes a free row for a new instance in this thread (under the maintenance lock); -1 if none is left. */
  acquire(): number {
    for (let row = MAINTENANCE_ROW + 1; row < ROWS; row++) {
      // Freed rows are reused; revoked ones (presumed dead) only once `reclaim` frees them.
      const w = row * ROW_WORDS;
      if (step.load(this.words, w + ROW_STATE) !== 0) continue;
      // The row's rings exist before it is owned: its owner appends to them, the holder drains them, from then on.
      growTo(this.#ringBuffer, (row + 1) * ROW_RINGS * Float64Array.BYTES_PER_ELEMENT);
      this.#ringsOf(row + 1);
      // Its owner's thread first, then owned: a thread killed in between leaves a free row, not one nobody can reclaim.
      step.store(this.words, w + ROW_THREAD, threadId);
      // A CAS all the same: a holder taken over while stalled here may race its successor's acquire. The loser's
      // thread id, if written last, only sends the winner's calls to the lock, where it takes another row.
      if (step.compareExchange(this.words, w + ROW_STATE, 0, ROW_OWNED) !== 0) continue;
      this.#header[ROW_HIGH_WATER] = Math.max(this.highWater, row + 1);
      return row;
    }
    return NO_ROW;
  }

  /** The rows thread `exited` owns and left inside a lock-free call (odd CALL): for the holder to revoke, as the watch would after the queue's patience. */
  inCallOf(exited: number): number[] {
    const rows: number[] = [];
    for (let row = MAINTENANCE_ROW + 1, n = this.highWater; row < n; row++) {
      const w = row * ROW_WORDS;
      const mine = step.load(this.words, w + ROW_THREAD) === exited && step.load(this.words, w + ROW_STATE) === ROW_OWNED;
      if (mine && (step.load(this.words, w + ROW_CALL) & 1) === 1) rows.push(row);
    }
    return rows;
  }

  /**
   * Frees the rows of a thread that has exited (under the maintenance lock),
   * which it can no longer give back at close; returns how many. A row it
   * left between two calls: every move it made is done (one it died in under
   * the lock was finished by the rebuild that took the lock over, before
   * this ran), and its ring entries are drained as any row's. A row it left
   * inside a lock-free call only once REVOKED, its move finished by a
   * rebuild (see JobQueue#threadExited); an OWNED one still in a call stays.
   */
  reclaim(exited: number): number {
    let freed = 0;
    for (let row = MAINTENANCE_ROW + 1, n = this.highWater; row < n; row++) {
      const w = row * ROW_WORDS;
      if (step.load(this.words, w + ROW_THREAD) !== exited) continue;
      const state = step.load(this.words, w + ROW_STATE);
      const call = step.load(this.words, w + ROW_CALL);
      if (!(state === ROW_REVOKED || (state === ROW_OWNED && (call & 1) === 0))) continue;
      // A revoked row may have died inside its call: even again, so that its next owner's calls read as odd (inside) and even (out).
      if ((call & 1) === 1) step.store(this.words, w + ROW_CALL, call + 1);
      // From the state just read: an acquire (by a live thread, under this same lock) cannot have come between.
      if (step.compareExchange(this.words, w + ROW_STATE, state, 0) === state) freed++;
    }
    return freed;
  }

  /** Gives an owned row back (at close); a revoked one stays revoked, and one reclaimed is not this thread's to give. */
  release(row: number): void {
    if (step.load(this.words, row * ROW_WORDS + ROW_THREAD) !== threadId) return;
    step.compareExchange(this.words, row * ROW_WORDS + ROW_STATE, ROW_OWNED, 0);
  }

  owned(row: number): boolean {
    return step.load(this.words, row * ROW_WORDS + ROW_STATE) === ROW_OWNED;
  }

  /** Whether this thread owns `row` still: not revoked, nor freed (and perhaps taken by another thread) by a `reclaim` that took this thread for exited. */
  ownedHere(row: number): boolean {
    return this.ownedBy(row, threadId);
  }

  /** Whether `row` is owned by thread `thread` still (`ownedHere`, for another thread): a reservation's owner lives on (I30). */
  ownedBy(row: number, thread: number): boolean {
    const w = row * ROW_WORDS;
    return step.load(this.words, w + ROW_STATE) === ROW_OWNED && step.load(this.words, w + ROW_THREAD) === thread;
  }

  /**
   * Enters a lock-free call: false if worker calls must take the lock now (a
   * rebuild's gate is shut). The Dekker half of the gate (keeps I11; the other half is Rebuilder#rebuild): the odd CALL is
   * published before ATTENTION is read, and a rebuilder shuts the gate
   * before it reads CALL, so either it waits for this call or this call
   * sees the gate.
   */
  enter(row: number, attention: number): boolean {
    // An exclusive queue has no rebuilder in another thread to wait for its call: no window, only the bits.
    if (this.#access.exclusive) return (this.#lockWords[ATTENTION]! & attention) === 0;
    const at = row * ROW_WORDS + ROW_CALL;
    // Odd: inside a call. Sequentially consistent, ordered before the ATTENTION read below.
    step.store(this.words, at, this.words[at]! + 1);
    // A row revoked (presumed dead while it was only slow), or reclaimed, must not start another move: the owner takes a new one.
    if (this.attentionClear(attention) && this.ownedHere(row)) return true;
    // Even again: we leave at once, for the locked path.
    step.store(this.words, at, this.words[at]! + 1);
    return false;
  }

  /** Whether none of `attention`'s bits is set (read again inside a call's window: see WorkerSide#fastPath). */
  attentionClear(attention: number): boolean {
    // One thread: nothing has moved since `enter` looked, and its hot path pays no second load.
    if (this.#access.exclusive) return true;
    return (step.load(this.#lockWords, ATTENTION) & attention) === 0;
  }

  leave(row: number): void {
    if (this.#access.exclusive) return;
    const at = row * ROW_WORDS + ROW_CALL;
    // Even: out of the call; a rebuilder waiting on this row may go on.
    step.store(this.words, at, this.words[at]! + 1);
  }

  call(row: number): number {
    // Read by the watch and the gate: whether the owner is inside a call, and which one.
    return step.load(this.words, row * ROW_WORDS + ROW_CALL);
  }

  gateShut(): boolean {
    return (step.load(this.#lockWords, ATTENTION) & GATE) !== 0;
  }

  count(row: number, status: number, delta: number): void {
    this.data[row * ROW_DATA + ROW_COUNTS + status]! += delta;
  }

  finishedChunks(row: number, delta: number): void {
    this.data[row * ROW_DATA + ROW_FINISHED_CHUNKS]! += delta;
  }

  /** The sum over rows of a counter (ROW_COUNTS + status, or ROW_FINISHED_CHUNKS): exact when no call is in flight. */
  sum(field: number): number {
    let total = 0;
    for (let row = 0, n = this.highWater; row < n; row++) total += this.data[row * ROW_DATA + field]!;
    return total;
  }

  /** Sets row 0's counters so that the sums over rows equal `counts` (a rebuild's recount), with every call held at the gate. */
  setTotals(counts: readonly number[], finishedChunks: number): void {
    const maintenance = MAINTENANCE_ROW * ROW_DATA;
    for (let s = 0; s < STATUS_COUNT; s++) {
      this.data[maintenance + ROW_COUNTS + s] = 0;
      this.data[maintenance + ROW_COUNTS + s] = counts[s]! - this.sum(ROW_COUNTS + s);
    }
    this.data[maintenance + ROW_FINISHED_CHUNKS] = 0;
    this.data[maintenance + ROW_FINISHED_CHUNKS] = finishedChunks - this.sum(ROW_FINISHED_CHUNKS);
  }

  /** Entries the ring can take now. */
  room(row: number, ring: RingKind): number {
    const w = row * ROW_WORDS;
    // The holder's drained position: how far it has emptied the owner's ring.
    return ROW_RING_ENTRIES - (this.words[w + tailOf(ring)]! - this.#access.load(this.words, w + drainedOf(ring)));
  }

  hasRoom(row: number, ring: RingKind): boolean {
    return this.room(row, ring) > 0;
  }

  /** Appends (key, slot, word) to the owner's ring; the caller checked `hasRoom`. */
  append(row: number, ring: RingKind, key: number, slot: number, word: number): void {
    const w = row * ROW_WORDS;
    const tail = this.words[w + tailOf(ring)]!;
    const at = row * ROW_RINGS + ring + (tail % ROW_RING_ENTRIES) * RING_ENTRY_FIELDS;
    // The owner's own row: this thread grew the rings for it (acquire), or row 0's, there from the start.
    const rings = this.#rings;
    rings[at + RING_KEY] = key;
    rings[at + RING_ENTRY_SLOT] = slot;
    rings[at + RING_ENTRY_WORD] = word;
    // Publishes the entry (keeps I10): the holder reads entries only below the tail.
    this.#access.store(this.words, w + tailOf(ring), tail + 1);
  }

  tail(row: number, ring: RingKind): number {
    // The holder's look at how far the owner has appended.
    return step.load(this.words, row * ROW_WORDS + tailOf(ring));
  }

  /** Hands every entry not yet drained, of every row, to `visit` (the lock holder only). */
  drain(ring: RingKind, visit: (key: number, slot: number, word: number) => void): void {
    const n = this.highWater;
    const rings = this.#ringsOf(n);
    for (let row = 0; row < n; row++) {
      const w = row * ROW_WORDS;
      const tail = this.tail(row, ring as RingKind);
      let drained = this.words[w + drainedOf(ring)]!;
      // Most rows have appended nothing since the last drain: leave their lines alone.
      if (drained === tail) continue;
      for (; drained < tail; drained++) {
        const at = row * ROW_RINGS + ring + (drained % ROW_RING_ENTRIES) * RING_ENTRY_FIELDS;
        visit(rings[at + RING_KEY]!, rings[at + RING_ENTRY_SLOT]!, rings[at + RING_ENTRY_WORD]!);
      }
      // Frees the ring's room for its owner.
      step.store(this.words, w + drainedOf(ring), drained);
    }
  }

  /** Lets go of every entry not yet drained, of every row (the lock holder only): `drain` with nothing to do for them. */
  skip(ring: RingKind): void {
    for (let row = 0, n = this.highWater; row < n; row++) {
      const w = row * ROW_WORDS;
      // Frees the ring's room for its owner.
      this.#access.store(this.words, w + drainedOf(ring), this.tail(row, ring));
    }
  }

  /** Records every row's tail of `ring` in `into` (for `movedSince`). */
  tails(ring: RingKind, into: Int32Array): void {
    for (let row = 0, n = this.highWater; row < n; row++) into[row] = this.tail(row, ring);
  }

  /** Whether some row appended to `ring` since `tails` recorded it. */
  movedSince(ring: RingKind, tails: Int32Array): boolean {
    for (let row = 0, n = this.highWater; row < n; row++) if (this.tail(row, ring) !== tails[row]) return true;
    return false;
  }

  /** Forgets every ring entry (a rebuild re-derives them from the slots, with every call held at the gate). */
  clearRings(): void {
    this.skip(LEASE_RING);
    this.skip(FINISH_RING);
  }
}
