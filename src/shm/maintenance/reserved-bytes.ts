import { threadId } from 'node:worker_threads';
import { Refusal } from '../../errors.js';
import { Arena } from '../tables/arena.js';
import { MAINTENANCE_ROW, RESERVATIONS, RUN_MIN_CHUNKS } from '../memory/layout.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { MoverHolder } from '../protocol/mover.js';
import { NO_ENTRY, type ReservationEntry } from '../tables/reservations.js';
import { SharedBytes } from '../memory/shared-bytes.js';
import type { Room } from './room.js';

/** A run this instance reserved that its producer has neither submitted nor released. */
interface Pending {
  readonly entry: number;
  readonly stamp: number;
  readonly head: number;
  readonly bytes: number;
}

/**
 * Payloads a producer writes in place (`reserveBytes`): this instance's
 * reservations, and the lock holder's part of them. A reservation is an
 * arena run taken under the lock and recorded in the reservation table
 * (tables/reservations.ts), then filled by its producer outside any lock; a
 * submit of its very view adopts the run as the job's data chain, under the
 * lock, with no copy (keeps I30).
 *
 * The views are known by identity, per instance: a view another instance
 * reserved, a subarray of one, or one already submitted or released is
 * any other Uint8Array to a submit (copied).
 *
 * A reservation is not given back when its view is garbage-collected (no
 * FinalizationRegistry): a subarray or a Buffer over the same memory
 * outlives the view object, and its producer could go on writing into
 * chunks another job holds by then. An abandoned one is held until its
 * instance closes or its thread is known gone (I30), and the table's bound
 * caps what that can hold.
 */
export class ReservedBytes {
  readonly #m: QueueMemory;
  readonly #room: Room;
  readonly #holder: MoverHolder;
  /** This instance's pending reservations, by their view. */
  readonly #pending = new WeakMap<Uint8Array, Pending>();
  /** The same, by stamp: what `close` gives back. */
  readonly #open = new Map<number, Pending>();
  /** Every Uint8Array `reserve` handed out, views and plain ones alike: what `release` accepts. */
  readonly #handed = new WeakSet<Uint8Array>();

  constructor(memory: QueueMemory, room: Room, holder: MoverHolder) {
    this.#m = memory;
    this.#room = room;
    this.#holder = holder;
  }

  /**
   * Under the lock: a run of `byteLength` bytes for its producer to fill, as
   * a view onto the arena; or undefined where none can be had (shorter than
   * a run, no free stretch that long even after evictions, the table full):
   * then the caller hands out a plain Uint8Array (`handPlain`), which a
   * submit copies.
   */
  reserve(byteLength: number): Uint8Array | undefined {
    const { arena, reservations, lock } = this.#m;
    const chunks = Arena.chunksFor(byteLength);
    if (chunks < RUN_MIN_CHUNKS || reservations.live >= RESERVATIONS) return undefined;
    if (this.#room.makeRoom(chunks, 0) < 0) return undefined;
    assertHeld(lock);
    const head = arena.reserveRun(byteLength);
    if (head === 0) return undefined;
    const row = this.#holder.mover.row;
    const entry = reservations.add(head, byteLength, row, threadId);
    if (entry === NO_ENTRY) {
      arena.free(head, byteLength);
      return undefined;
    }
    const stamp = reservations.stampOf(entry);
    try {
      // After the entry: still ours here, so a taker's rebuild comes after it and keeps the run (keeps I30). A
      // rebuild that came before it freed the run, and the entry is taken back: nobody is handed freed chunks.
      assertHeld(lock);
    } catch (error) {
      if (error instanceof LockLost) reservations.remove(entry, stamp);
      throw error;
    }
    // The run's bytes, in a view whose `fill` is as fast as over unshared memory (see SharedBytes).
    const run = arena.viewBytes(head, 0, byteLength);
    const view = new SharedBytes(this.#m.buffers.arena, run.byteOffset, byteLength);
    const pending = { entry, stamp, head, bytes: byteLength };
    this.#pending.set(view, pending);
    this.#open.set(stamp, pending);
    this.#handed.add(view);
    return view;
  }

  /** Reservations of this instance neither submitted nor released. */
  get pending(): number {
    return this.#open.size;
  }

  /** A plain Uint8Array handed out for a reservation that could not be had: `release` accepts it. */
  handPlain(bytes: Uint8Array): Uint8Array {
    this.#handed.add(bytes);
    return bytes;
  }

  /**
   * Under the lock, before a submit of `payload` stores anything: the run it
   * adopts (its first chunk), 0 if it is no pending reservation of this
   * instance (stored as a copy), or Refusal.ReservationLost if it was one and
   * has been reclaimed. The entry stays until `spend`, after the job is
   * placed: a holder taken for dead between the two leaves both, and the
   * next rebuild finds the run in the slot (keeps I30).
   */
  adoption(payload: unknown): number {
    if (!(payload instanceof Uint8Array)) return 0;
    const pending = this.#pending.get(payload);
    if (pending === undefined) return 0;
    return this.#m.reservations.holds(pending.entry, pending.stamp) ? pending.head : Refusal.ReservationLost;
  }

  /**
   * After the job with `payload` was placed: the reservation is spent. An
   * adopted one's entry goes (the slot references the run now); one that was
   * copied instead (its type had no entry in the type table) is freed.
   */
  spend(payload: Uint8Array, adopted: boolean): void {
    const pending = this.#forget(payload);
    if (pending === undefined) return;
    if (adopted) this.#m.reservations.remove(pending.entry, pending.stamp);
    else this.#free(pending);
  }

  /**
   * Under the lock: gives back the reservation `bytes` if it is pending
   * (its chunks free again); a Uint8Array handed out and since submitted or
   * released changes nothing. False if `bytes` was never handed out by this instance.
   */
  release(bytes: Uint8Array): boolean {
    if (!this.#handed.has(bytes)) return false;
    // Before it is forgotten: a holder taken for dead here runs the call again, and frees it then.
    assertHeld(this.#m.lock);
    const pending = this.#forget(bytes);
    if (pending !== undefined) this.#free(pending);
    return true;
  }

  /** Under the lock, at close: every pending reservation of this instance is given back. */
  releaseAll(): void {
    assertHeld(this.#m.lock);
    for (const pending of [...this.#open.values()]) this.#free(pending);
    this.#open.clear();
  }

  /**
   * Under the lock: frees every reservation `dead` says has no live owner (a
   * thread known to have exited, a row revoked or freed): its producer can
   * no longer submit it, and its run would be held forever. A reclaimed
   * reservation's submit is refused (keeps I30).
   */
  reclaim(dead: (entry: ReservationEntry) => boolean): void {
    const { reservations, arena } = this.#m;
    assertHeld(this.#m.lock);
    reservations.forEach((entry) => {
      if (dead(entry) && reservations.remove(entry.entry, entry.stamp)) arena.free(entry.head, entry.bytes);
    });
  }

  /** Whether an entry's owner is known dead by its row: one it had and no longer owns (revoked, or freed and perhaps another thread's). */
  ownerGone(entry: ReservationEntry): boolean {
    return entry.row !== MAINTENANCE_ROW && !this.#m.rows.ownedBy(entry.row, entry.thread);
  }

  #forget(view: Uint8Array): Pending | undefined {
    const pending = this.#pending.get(view);
    if (pending === undefined) return undefined;
    this.#pending.delete(view);
    this.#open.delete(pending.stamp);
    return pending;
  }

  /** Frees a reservation's run, if its entry is still its own (not reclaimed meanwhile, its chunks then freed already). */
  #free(pending: Pending): void {
    if (this.#m.reservations.remove(pending.entry, pending.stamp)) this.#m.arena.free(pending.head, pending.bytes);
  }
}
