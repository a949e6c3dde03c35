import { Refusal } from '../../errors.js';
import { Arena } from '../tables/arena.js';
import type { Filing } from './filing.js';
import type { JournalNotes } from '../journal/journal-notes.js';
import {
  CANCELLED, DEAD, DIED_AT, ENTRY_K1, ENTRY_K2, ENTRY_SLOT, ENTRY_WORD, ERROR_DROPPED, ERROR_EMPTY, FREE_SLOT_COUNT, LAST_NOW, RECORD_FIELDS, ROW_COUNTS,
  JOB_NUM, ROW_FINISHED_CHUNKS, SLOT_HIGH_WATER, SUCCEEDED,
} from '../memory/layout.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { MoverHolder } from '../protocol/mover.js';
import { evictJob } from '../moves/evict.js';
import { removeJob } from '../moves/remove.js';
import { countedChainBytes } from '../records.js';
import type { StoredResult } from '../../validate/outcome.js';
import type { Retention } from './retention.js';

/** What Room#frozenSlot holds when no eviction passed over a frozen job. */
export const NONE_FROZEN = -1;

/** How room is looked at again before a refusal, at one instant: the holder's `settle` (see CatchUp#settle). */
export interface Settler {
  settle(now: number): boolean;
}

/**
 * Room under the maintenance lock: free slots, arena chunks for the strings
 * of a job (its data, key and headers) and for a lastError or result; made
 * by evicting finished jobs, oldest finished first, but only when that makes
 * enough (a refusal evicts nothing), and as the `retain` option's limits
 * ask. A job frozen by its commit in flight is passed over (see layout.ts).
 */
export class Room {
  readonly #m: QueueMemory;
  /** The `retain` option's limits on finished jobs. */
  readonly #retention: Retention;
  readonly #filing: Filing;
  /** An eviction is noted for the journal, and passes over frozen jobs. */
  readonly #notes: JournalNotes;
  readonly #holder: MoverHolder;
  readonly #settler: Settler;
  /** Inside makeRoom's wait for lock-free calls before a refusal (see there). */
  #settlingForRoom = false;
  /** A copy of a slot's record, read under the lock. */
  readonly #record = new Float64Array(RECORD_FIELDS);
  /** Frozen jobs an eviction passed over (see #evictFirstOf), put back as it ends. */
  readonly #passedOver: number[] = [];
  /**
   * No DEAD job ages out before this time (the retain option's
   * maxDeadAgeMillis), as this instance's last look found: 0, look again.
   * Its own, not shared: every job that died since that look died no
   * earlier than it (the holder's time only goes on: a clock that goes back
   * rebuilds), so ages out no earlier than this; a job retried or removed
   * since only makes the next look come early. With no DEAD job at all it is
   * 0: the next DEAD job may come from the journal, dead long ago.
   */
  #deadAgedAt = 0;

  constructor(memory: QueueMemory, retention: Retention, filing: Filing, notes: JournalNotes, holder: MoverHolder, settler: Settler) {
    this.#m = memory;
    this.#retention = retention;
    this.#filing = filing;
    this.#notes = notes;
    this.#holder = holder;
    this.#settler = settler;
  }

  /**
   * Makes room for `chunks` arena chunks and `jobs` slots, evicting finished
   * jobs oldest first — but only if that will succeed: a refusal evicts nothing.
   */
  makeRoom(chunks: number, jobs: number): number {
    this.frozenSlot = NONE_FROZEN;
    const refusal = this.#roomNow(chunks, jobs);
    if (refusal === 0 || this.#settlingForRoom) return refusal;
    // Before a refusal: a lock-free complete in flight may have finished a job whose finish-ring entry
    // (made after its move) is not in the finished order yet. Its call is waited out and the room looked
    // at again, so that a refusal means no room at that instant. Once per refusal: the catch-up of the
    // settle may store errors, which look for room themselves.
    this.#settlingForRoom = true;
    try {
      this.#settler.settle(this.#m.header[LAST_NOW]!);
      this.#filing.drainFinished();
    } finally {
      this.#settlingForRoom = false;
    }
    return this.#roomNow(chunks, jobs);
  }

  /**
   * After a refusal of makeRoom: the slot of a finished job an eviction passed
   * over because its commit is in flight (see Frozen jobs in layout.ts), or
   * NONE_FROZEN. Once that commit is durable the job can be evicted, so a submit waits
   * for it rather than refuse: the call that finished the job took effect
   * before this one (keeps the journaled queue linearizable; the scheduler
   * found a QueueFullError beside a complete in flight).
   */
  frozenSlot = NONE_FROZEN;

  /** makeRoom without waiting for lock-free calls in flight. */
  #roomNow(chunks: number, jobs: number): number {
    const { arena, rows } = this.#m;
    // The common case, room already: no counters summed.
    if (this.#freeSlots() >= jobs && chunks <= arena.freeChunks) return 0;
    const finishedJobs = rows.sum(ROW_COUNTS + SUCCEEDED) + rows.sum(ROW_COUNTS + CANCELLED);
    if (jobs > this.#freeSlots() + finishedJobs) return Refusal.NoSlot;
    if (chunks > arena.freeChunks && chunks > arena.freeChunks + rows.sum(ROW_FINISHED_CHUNKS)) return Refusal.NoBytes;
    while (this.#freeSlots() < jobs || chunks > arena.freeChunks) {
      // Only if the counters lied (they are hints): refuse rather than loop.
      if (!this.#evictOldest()) return Refusal.NoBytes;
    }
    return 0;
  }

  /**
   * Evicts the finished jobs the `retain` option has no room for: beyond
   * maxFinished, and (oldest finished first) those finished maxAgeMillis
   * before `now` or earlier. Part of bringing the queue up to now, in every
   * locked call; lock-free completes are counted once their ring is drained.
   */
  retain(now: number): void {
    const retention = this.#retention;
    if (retention.deadLimits) this.#retainDead(now);
    if (!retention.limits) return;
    // The jobs completed lock-free since the last drain: into the finished order, with when they finished.
    this.#filing.drainFinished();
    while (this.#finishedJobs() > retention.maxFinished && this.#evictOldest());
    while (this.#filing.retentionDue() <= now && this.#evictOldest(now - retention.maxAgeMillis));
  }

  /**
   * Evicts the DEAD jobs the `retain` option's DEAD limits have no room for:
   * beyond maxDead, oldest dead first (DIED_AT, then job number), and those
   * dead maxDeadAgeMillis before `now` or earlier. DEAD jobs have no order of
   * their own: the slots are scanned, O(slots used), only when the count is
   * over its limit (so about once per job that dies beyond it) or a job may
   * have aged out (#deadAgedAt). Never for room: room evicts only
   * SUCCEEDED and CANCELLED jobs (I20). A frozen job is kept (I21).
   */
  #retainDead(now: number): void {
    const retention = this.#retention;
    const deadJobs = this.#m.rows.sum(ROW_COUNTS + DEAD);
    if (deadJobs === 0) {
      this.#deadAgedAt = 0;
      return;
    }
    const over = deadJobs - retention.maxDead;
    if (over <= 0 && now < this.#deadAgedAt) return;
    const { slots, header } = this.#m;
    const dead: number[] = [];
    let frozen = false;
    for (let slot = 0; slot < header[SLOT_HIGH_WATER]!; slot++) {
      if (slots.status(slot) !== DEAD) continue;
      if (this.#notes.frozen(slot)) frozen = true;
      else dead.push(slot);
    }
    const diedAt = (slot: number) => slots.get(slot, DIED_AT);
    dead.sort((a, b) => diedAt(a) - diedAt(b) || slots.get(a, JOB_NUM) - slots.get(b, JOB_NUM));
    let kept = 0;
    for (let excess = over; kept < dead.length; kept++) {
      const slot = dead[kept]!;
      if (excess <= 0 && diedAt(slot) + retention.maxDeadAgeMillis > now) break;
      evictJob(this.#m, this.#notes, this.#holder.mover, this, this.#record, slot, slots.word(slot));
      excess--;
    }
    // A frozen job was left out of the look: the next call looks again (its commit is a few milliseconds away).
    this.#deadAgedAt = frozen || kept === dead.length ? 0 : diedAt(dead[kept]!) + retention.maxDeadAgeMillis;
  }

  #finishedJobs(): number {
    const rows = this.#m.rows;
    return rows.sum(ROW_COUNTS + SUCCEEDED) + rows.sum(ROW_COUNTS + CANCELLED);
  }

  /** Slots free now, counting those never used. */
  #freeSlots(): number {
    const { header, slots } = this.#m;
    return header[FREE_SLOT_COUNT]! + slots.capacity - header[SLOT_HIGH_WATER]!;
  }

  /** Whether a job of `chunks` arena chunks fits now, with no eviction. */
  fitsNow(chunks: number): boolean {
    return this.#freeSlots() >= 1 && chunks <= this.#m.arena.freeChunks;
  }

  /**
   * A slot for a new job (its room made): the last one freed, else the first
   * never used. The room was made under the lock: none left means the lock
   * was taken over since (LockLost), and the slot pool is the taker's.
   */
  takeSlot(): number {
    const { header, freeSlots, slots } = this.#m;
    assertHeld(this.#m.lock);
    if (header[FREE_SLOT_COUNT]! > 0) return freeSlots[--header[FREE_SLOT_COUNT]!]!;
    const slot = header[SLOT_HIGH_WATER]!;
    if (slot >= slots.capacity) throw new LockLost();
    // The slot's memory first, then the high water that hands it out (see Growth in layout.ts).
    slots.grow(slot + 1);
    header[SLOT_HIGH_WATER] = slot + 1;
    return slot;
  }

  /** Arena chunks holding `error`, or a canned error: ERROR_EMPTY, or ERROR_DROPPED if there is no room. */
  storeError(error: string): number {
    const bytes = Buffer.byteLength(error);
    if (bytes === 0) return ERROR_EMPTY;
    if (this.makeRoom(Arena.chunksFor(countedChainBytes(bytes)), 0) < 0) return ERROR_DROPPED;
    assertHeld(this.#m.lock);
    return this.#m.arena.storeCounted(bytes, error);
  }

  /**
   * Arena chunks holding a complete's result (its JSON text, or the bytes
   * of a binary one), for the complete to point its record at; or Refusal.NoBytes,
   * having evicted nothing, if there is no room.
   */
  storeResult(result: StoredResult): number {
    const bytes = typeof result === 'string' ? Buffer.byteLength(result) : result.length;
    const refusal = this.makeRoom(Arena.chunksFor(countedChainBytes(bytes)), 0);
    if (refusal < 0) return refusal;
    assertHeld(this.#m.lock);
    return typeof result === 'string' ? this.#m.arena.storeCounted(bytes, result) : this.#m.arena.storeCountedBytes(result);
  }

  /** Frees a counted chain: a result's from `storeResult`, an error's from `storeError`, a job's headers (0 and a canned error have none). */
  freeCounted(ref: number): void {
    const arena = this.#m.arena;
    if (ref > 0) arena.free(ref, countedChainBytes(arena.countedBytes(ref)));
  }

  /** Removes the job in `slot` (its settled word `word`, not RUNNING, not frozen); false if the slot moved first (see moves/remove.ts). */
  remove(slot: number, word: number): boolean {
    return removeJob(this.#m, this.#notes, this.#holder.mover, this, this.#record, slot, word);
  }

  /**
   * Evicts the finished job that finished first; false if there is none
   * (or, with `finishedBy`, if it finished later than that). A job frozen by
   * its commit in flight is passed over (see layout.ts).
   */
  #evictOldest(finishedBy = Infinity): boolean {
    const { finished } = this.#m;
    this.#filing.orderFinished();
    this.#filing.drainFinished();
    // This call's entries of the list start at `mark`: an eviction allocates no list of its own.
    const frozen = this.#passedOver;
    const mark = frozen.length;
    try {
      return this.#evictFirstOf(frozen, finishedBy);
    } finally {
      // Passed over while their commit is in flight: back at the front of the order, the newest first (each then goes
      // before all); by a holder that still holds the lock (one taken for dead leaves the order to its successor's rebuild).
      if (frozen.length > mark && this.#m.lock.held()) {
        for (let at = frozen.length - 4; at >= mark; at -= 4) this.#filing.push(finished, frozen[at]!, frozen[at + 1]!, 0, frozen[at + 2]!, frozen[at + 3]!);
      }
      frozen.length = mark;
    }
  }

  /**
   * Evicts the first finished job of the order that is not frozen (those go to
   * `frozen`: finishSeq, finishedAt, slot, word), unless it finished after `finishedBy`.
   */
  #evictFirstOf(frozen: number[], finishedBy: number): boolean {
    const { finished, slots } = this.#m;
    while (finished.size > 0) {
      const slot = finished.top(ENTRY_SLOT);
      const word = finished.top(ENTRY_WORD);
      const finishSeq = finished.top(ENTRY_K1);
      const finishedAt = finished.top(ENTRY_K2);
      if (slots.word(slot) === word && !this.#notes.frozen(slot) && finishedAt > finishedBy) return false;
      // Looked at just before the order changes: a holder taken for dead (stalled in this loop) must not drop an
      // entry of the order its successor rebuilt, whose job then could never be evicted (a submit refused as full).
      assertHeld(this.#m.lock);
      finished.pop();
      if (slots.word(slot) !== word) continue;
      if (this.#notes.frozen(slot)) {
        frozen.push(finishSeq, finishedAt, slot, word);
        if (this.frozenSlot === NONE_FROZEN) this.frozenSlot = slot;
        continue;
      }
      evictJob(this.#m, this.#notes, this.#holder.mover, this, this.#record, slot, word);
      return true;
    }
    return false;
  }
}
