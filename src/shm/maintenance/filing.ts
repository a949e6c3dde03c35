import * as step from '../memory/steps.js';
import {
  ATTENTION, CANCELLED, DELAYED, DUE_LOWERED, DUE_PUBLISHING, ENTRY_K1, ENTRY_K2, ENTRY_SLOT, ENTRY_WORD, FINISHED_ORDERED, FINISH_RING, FINISH_SEQ, JOB_NUM,
  LAST_NOW, LEASE_RING, LEASE_UNTIL, READY, RECORD_FIELDS, ROWS, RUNNING, RUN_AT, SLOT_HIGH_WATER, SUCCEEDED, isBusy, statusOf, type SlotStatus,
} from '../memory/layout.js';
import type { EntryOrder } from '../tables/finish-order.js';
import type { SharedHeap } from '../tables/heap.js';
import { assertHeld, repairIfTakenOver } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { MoverHolder } from '../protocol/mover.js';
import { chunksOf } from '../records.js';
import type { Retention } from './retention.js';

/**
 * NEXT_DUE when nothing is due: this long after the holder's time, not
 * Infinity. NEXT_DUE may be earlier than the first entry due (a call past it
 * catches up and finds nothing: one locked call), never later. At Infinity,
 * the next lease, of any length, would be earlier than it and send every
 * thread's next call to the lock (DUE_LOWERED); and a queue whose jobs finish
 * as fast as they are leased often has no valid lease as a holder publishes.
 */
const NOTHING_DUE_MILLIS = 1_000;

/**
 * Where a job's status files it, under the maintenance lock: the ready
 * rings, the delayed, lease and held heaps, the finished order (each entry carries the
 * word it was filed for: one the slot no longer holds is stale, and dropped
 * as it surfaces). Also drains the rows' lease and finish rings into their
 * heaps, and publishes NEXT_DUE, the earliest entry due, for the lock-free
 * calls to compare `now` with.
 */
export class Filing {
  readonly #m: QueueMemory;
  /** For an age limit, finished jobs come due too. */
  readonly #retention: Retention;
  /** The mover of the holder's moves now: a finished job's chunks are counted in its row. */
  readonly #holder: MoverHolder;
  readonly #tails = new Int32Array(ROWS);
  /** Whether the delayed or lease heap changed since NEXT_DUE was published. */
  #dueDirty = true;
  /** A copy of a slot's record, read under the lock. */
  readonly #record = new Float64Array(RECORD_FIELDS);
  /** The jobs made ready since `collectReady` (slot, word, ...), to be filed by `fileCollected`; undefined when not collecting. */
  #collected: number[] | undefined;

  constructor(memory: QueueMemory, retention: Retention, holder: MoverHolder) {
    this.#m = memory;
    this.#retention = retention;
    this.#holder = holder;
  }

  /** The delayed or lease heap changed, or may have (a catch-up, a rebuild): NEXT_DUE is published anew. */
  dueChanged(): void {
    this.#dueDirty = true;
  }

  /** Files a job where its new status needs it: a ready ring, the delayed heap, the finished order. */
  file(slot: number, word: number, status: SlotStatus): void {
    const { slots, delayed, rows, listing } = this.#m;
    listing.sync(slot);
    if (status === READY) this.fileReady(slot, word);
    // A parent waiting for its children is filed nowhere: no catch-up promotes it (keeps I28).
    else if (status === DELAYED) {
      if (slots.waitings[slot] === 0) this.push(delayed, slots.get(slot, RUN_AT), slots.get(slot, JOB_NUM), 0, slot, word);
    }
    else if (status === SUCCEEDED || status === CANCELLED) {
      // Finished at the time the locked call runs at.
      this.fileFinished(slot, word, this.#m.header[LAST_NOW]!);
      rows.finishedChunks(this.#holder.mover.row, chunksOf(slots.readInto(slot, this.#record)));
    } else if (status === RUNNING) {
      this.push(this.#m.leases, slots.get(slot, LEASE_UNTIL), 0, 0, slot, word);
    }
  }

  /**
   * Files a READY job in the ready ring of its priority, for the word it
   * holds (or, while groups take turns, by its `turn` if it kept one, see ReadyIndex#file). Not by a holder taken over: a ring append takes no look at the
   * lock, and would race the taker's. Such a holder marks the hints stale at
   * once, and the next holder's rebuild files the job from its slot.
   */
  fileReady(slot: number, word: number, turn = 0): void {
    // Made ready by a catch-up while groups take turns: its turn is given once the catch-up is done (see collectReady).
    if (this.#collected !== undefined && turn === 0) this.#collected.push(slot, word);
    else {
      if (this.#m.lock.held()) this.#m.ready.file(slot, word, turn);
      // Taken over before the append or in it: the job is in no ring, or the rings hold what the append wrote over.
      repairIfTakenOver(this.#m.lock);
    }
  }

  /**
   * From now until `fileCollected`, the jobs made ready are collected, not
   * filed: a catch-up of a queue whose groups take turns expires leases and
   * promotes delayed jobs heap by heap, and the turns must go by when each
   * job became ready (its runAt: a retry's is its lease's end plus its
   * backoff), whichever heap it came from (keeps I27).
   */
  collectReady(): void {
    this.#collected = [];
  }

  /** Files the jobs collected since `collectReady` in (runAt, submission) order, each taking its group's next turn then. */
  fileCollected(): void {
    const collected = this.#collected;
    this.#collected = undefined;
    if (collected === undefined || collected.length === 0) return;
    const { runAts, jobNums } = this.#m.slots;
    const order = Array.from({ length: collected.length / 2 }, (_, i) => 2 * i);
    order.sort((a, b) => runAts[collected[a]!]! - runAts[collected[b]!]! || jobNums[collected[a]!]! - jobNums[collected[b]!]!);
    for (const at of order) this.fileReady(collected[at]!, collected[at + 1]!);
  }

  /** Files the entry (k1, k2, k3) of the job in `slot`, for its `word`, in `heap` (or the finished order). */
  push(heap: EntryOrder, k1: number, k2: number, k3: number, slot: number, word: number): void {
    const slots = this.#m.slots;
    assertHeld(this.#m.lock);
    // A new lease, delayed or held job (or, with an age limit, finished job) may come before the NEXT_DUE published.
    if (heap === this.#m.leases || heap === this.#m.delayed || heap === this.#m.held || (heap === this.#m.finished && this.#retention.ages)) this.#dueDirty = true;
    // Full means mostly stale entries (a slot has at most one valid entry per heap): drop them.
    if (heap.full) heap.compact((s, w) => slots.word(s) === w);
    heap.push(k1, k2, k3, slot, word);
    repairIfTakenOver(this.#m.lock);
  }

  /** Moves the leases every row registered into the lease heap (also to make room in a full ring); those already finished are left out. */
  drainLeases(): void {
    const { rows, slots, leases, listing } = this.#m;
    rows.drain(LEASE_RING, (until, slot, word) => {
      if (slots.word(slot) === word) this.push(leases, until, 0, 0, slot, word);
      // A claim (or extend) made lock-free: the listing files the job under its status now, whatever it is.
      listing.sync(slot);
    });
  }

  /** Moves the finished jobs every row noted into the eviction order, if it is kept (also to make room in a full ring). */
  drainFinished(): void {
    const { rows, slots, listing } = this.#m;
    const ordered = this.#finishedOrdered();
    // Neither an eviction order nor a listing to keep: the entries are only let go.
    if (!ordered && !listing.built) return rows.skip(FINISH_RING);
    rows.drain(FINISH_RING, (finishedAt, slot, word) => {
      // Still as finished: the record holds its FINISH_SEQ.
      if (ordered && slots.word(slot) === word) this.fileFinished(slot, word, finishedAt);
      listing.sync(slot);
    });
  }

  /** Files a finished job (SUCCEEDED or CANCELLED, since `finishedAt`) in the eviction order, if one is kept. */
  fileFinished(slot: number, word: number, finishedAt: number): void {
    if (this.#finishedOrdered()) this.push(this.#m.finished, this.#m.slots.get(slot, FINISH_SEQ), finishedAt, 0, slot, word);
  }

  /**
   * fileFinished for a scan of the slots (a rebuild, orderFinished), which finds finished
   * jobs in no order: each is appended, and `sortFinished` puts them in order
   * once the scan is done, where filing each in its place would cost O(n²).
   * The order holds no other entry (it was cleared, or never kept).
   */
  fileFinishedUnordered(slot: number, word: number, finishedAt: number): void {
    if (!this.#finishedOrdered()) return;
    if (this.#retention.ages) this.#dueDirty = true;
    this.#m.finished.append(this.#m.slots.get(slot, FINISH_SEQ), finishedAt, 0, slot, word);
  }

  /** After a scan's fileFinishedUnordered: the eviction order, oldest finished first. */
  sortFinished(): void {
    if (!this.#finishedOrdered()) return;
    const sorted = this.#m.finished.sortedEntries();
    // The sort touches no lock: a holder stalled in it and taken over must not write over its successor's order.
    assertHeld(this.#m.lock);
    this.#m.finished.refill(sorted);
  }

  /**
   * Whether the finished order holds every finished job, oldest first: with a
   * retention limit from the start, else from the first eviction on (see
   * `orderFinished`). A queue that never needs room keeps no eviction order.
   */
  #finishedOrdered(): boolean {
    return this.#retention.limits || this.#m.header[FINISHED_ORDERED] === 1;
  }

  /**
   * Before an eviction: starts keeping the eviction order, if it was not kept
   * yet, from the slots themselves (a finished job's record holds its
   * FINISH_SEQ). O(slots used), once in the life of a queue: when it first
   * needs room. The rows' rings are let go first; a lock-free complete that
   * notes its job after that may file it twice, and the second entry is stale
   * once the first is evicted. Without an age limit, when a job finished
   * (K2) is never read.
   */
  orderFinished(): void {
    if (this.#finishedOrdered()) return;
    const { header, slots } = this.#m;
    this.drainFinished();
    header[FINISHED_ORDERED] = 1;
    this.#m.finished.clear();
    for (let slot = 0, high = header[SLOT_HIGH_WATER]!; slot < high; slot++) {
      const word = slots.word(slot);
      const status = statusOf(word);
      if (!isBusy(word) && (status === SUCCEEDED || status === CANCELLED)) this.fileFinishedUnordered(slot, word, header[LAST_NOW]!);
    }
    this.sortFinished();
  }

  /**
   * Ends a locked operation: publishes NEXT_DUE, the earliest lease or
   * delayed job, for the lock-free calls to compare `now` with. The holder's
   * half of the lease handshake (keeps I14; the other half is WorkerPath#registerLease): publish
   * (a seq-cst store), then look at the rings' tails again; a lease registered
   * meanwhile is drained and NEXT_DUE published anew.
   *
   * While it recomputes, NEXT_DUE is DUE_PUBLISHING. Without that mark a
   * call could read the old NEXT_DUE, later than a lease just registered,
   * and then find DUE_LOWERED already cleared for the drain: it ran
   * lock-free past the lease's end, and a poll passed over the expired job
   * for a worse one (the history checker found it).
   */
  publishDue(): void {
    const { header, rows, lockWords, leases, delayed, held } = this.#m;
    // A holder taken for dead (stalled past the timeout) leaves this to the one that took over.
    if (!this.#m.lock.held()) return;
    // Nothing moved that NEXT_DUE depends on: it stands (a lease registered earlier than it raises DUE_LOWERED by itself).
    if (!this.#dueDirty && (this.#m.access.load(lockWords, ATTENTION) & DUE_LOWERED) === 0) return;
    this.#dueDirty = false;
    for (;;) {
      // Before the flag is cleared: a lock-free call that reads ATTENTION, and NEXT_DUE after it, sees either the
      // flag or a NEXT_DUE no later than every lease the flag stood for (this mark, then the value drained below).
      this.#m.setNextDue(DUE_PUBLISHING);
      // Cleared before the drain: a lease lowered after this is in the rings the drain reads, or raises the flag again.
      step.and(lockWords, ATTENTION, ~DUE_LOWERED);
      rows.tails(LEASE_RING, this.#tails);
      this.drainLeases();
      this.#m.setNextDue(Math.min(this.validTop(leases), this.validTop(delayed), this.validTop(held), this.retentionDue(), header[LAST_NOW]! + NOTHING_DUE_MILLIS));
      // Published (seq-cst) before the tails are read again.
      if (!rows.movedSince(LEASE_RING, this.#tails)) return;
    }
  }

  /**
   * The earliest key of a heap's valid entries (stale ones on top are
   * dropped); Infinity if none. A lease entry is dropped as soon as its job
   * holds another word, without a look at how its new lease ends: a
   * lock-free extend stamps the new end from a clock reading taken within
   * its call (I17) and registers it as the call ends, so
   * only a lease that runs out before its own call has ended goes unseen
   * here (src/shm/README.md, Failures: "Left open on purpose").
   */
  validTop(heap: SharedHeap): number {
    const slots = this.#m.slots;
    while (heap.size > 0 && slots.word(heap.top(ENTRY_SLOT)) !== heap.top(ENTRY_WORD)) heap.pop();
    return heap.size > 0 ? heap.top(ENTRY_K1) : Infinity;
  }

  /** When the oldest finished job is due for eviction by age (stale entries on top dropped); Infinity if none is, ever. */
  retentionDue(): number {
    const { finished, slots } = this.#m;
    if (!this.#retention.ages) return Infinity;
    while (finished.size > 0 && slots.word(finished.top(ENTRY_SLOT)) !== finished.top(ENTRY_WORD)) finished.pop();
    return finished.size > 0 ? this.#retention.dueAt(finished.top(ENTRY_K2)) : Infinity;
  }
}
