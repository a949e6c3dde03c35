import * as step from './memory/steps.js';
import { Arena } from './tables/arena.js';
import { CommitRing } from './journal/commits.js';
import { SharedHeap } from './tables/heap.js';
import { FinishOrder } from './tables/finish-order.js';
import { Finishes } from './protocol/finishes.js';
import { Helping } from './protocol/helping.js';
import { JobMap } from './tables/jobmap.js';
import { KeyMap } from './tables/keymap.js';
import { ListingIndex } from './tables/listing.js';
import { fromBits, toBits } from './memory/float-bits.js';
import {
  ATTENTION, DUE_LOWERED, DUE_VERSION, FLOWS, FINISHED_HEAD, HEAP_SIZE_DELAYED, HEAP_SIZE_FINISHED, HEAP_SIZE_HELD, HEAP_SIZE_LEASES, HEAP_SIZE_OVERFLOW, LAST_NOW, NEXT_DUE, TYPE_NAME_COUNT, GROUP_NAME_COUNT,
  WORKER_NAME_COUNT,
  allocateBuffers, type QueueBuffers,
} from './memory/layout.js';
import { QUEUE_LOCK, QueueLock } from './protocol/lock.js';
import { Patience } from './protocol/patience.js';
import { WordAccess } from './memory/access.js';
import { RateLimitTable } from './tables/rate-limits.js';
import { ConcurrencyTable } from './tables/concurrency.js';
import { GroupTurns } from './tables/group-turns.js';
import { RetryPolicyTable } from './tables/retry-policies.js';
import { ReadyIndex } from './tables/ready.js';
import { RowTable } from './tables/rows.js';
import { WorkSignal } from './protocol/signal.js';
import { SlotTable } from './tables/slots.js';
import { NameTable } from './tables/names.js';
import { EventRing } from './tables/event-ring.js';
import { ReservationTable } from './tables/reservations.js';

/**
 * One thread's typed views of a queue's shared buffers. Creating the buffers
 * (`create`) happens once; every thread, the creator included, then builds its
 * own views over them (`new QueueMemory`).
 */
export class QueueMemory {
  readonly buffers: QueueBuffers;
  readonly header: Float64Array;
  /**
   * The same header as 64-bit integers, for NEXT_DUE and LAST_NOW: a lock
   * holder writes them while lock-free calls read them, so each holds the
   * bits of its float64 and is stored and loaded whole by Atomics (keeps I15;
   * see nextDue). The holder, the only writer, may read them plainly through
   * `header`.
   */
  readonly #headerBits: BigInt64Array;
  /** This thread's copies of NEXT_DUE and LAST_NOW, good while DUE_VERSION holds #timesVersion (see #refreshTimes); NaN: none yet. */
  #timesVersion = NaN;
  #nextDue = Infinity;
  #lastNow = -Infinity;
  readonly lockWords: Int32Array;
  readonly lock: QueueLock;
  /** How long a thread that shows no progress is watched before it is presumed dead (lockTimeoutMillis, raised by misjudgements). */
  readonly patience: Patience;
  readonly signal: WorkSignal;
  readonly finishes: Finishes;
  readonly slots: SlotTable;
  readonly rows: RowTable;
  readonly helping: Helping;
  readonly ready: ReadyIndex;
  readonly delayed: SharedHeap;
  readonly leases: SharedHeap;
  /** Finished jobs, oldest finished first: the eviction order. */
  readonly finished: FinishOrder;
  /** Ready jobs passed over by a poll until their type's window opens (see rate-limits.ts). */
  readonly held: SharedHeap;
  readonly rateLimits: RateLimitTable;
  readonly retryPolicies: RetryPolicyTable;
  /** Concurrency caps and RUNNING counts (see concurrency.ts). */
  readonly concurrency: ConcurrencyTable;
  readonly jobMap: JobMap;
  readonly keyMap: KeyMap;
  readonly freeSlots: Int32Array;
  readonly arena: Arena;
  readonly workerNames: NameTable;
  readonly typeNames: NameTable;
  /** The job groups seen by submit (and setGroupConcurrency). */
  readonly groupNames: NameTable;
  /** The fair turns of groups (see group-turns.ts). */
  readonly turns: GroupTurns;
  readonly commits: CommitRing;
  /** The per-status trees of `jobs()`, built on its first call. */
  readonly listing: ListingIndex;
  /** Per slot, the commit mark a frozen job waits for (journaled queues only, see layout.ts). */
  readonly awaited: Int32Array;
  /** The moves of jobs as events, while someone subscribes (see Event ring in layout.ts). */
  readonly events: EventRing;
  /** The arena runs reserved for producers to fill in place (see RESERVATIONS in layout.ts, I30). */
  readonly reservations: ReservationTable;
  /** How this instance reads and writes the shared words: atomically, or plainly while the queue is exclusive. */
  readonly access = new WordAccess();

  constructor(buffers: QueueBuffers, lockTimeoutMillis: number) {
    this.buffers = buffers;
    const header = (this.header = new Float64Array(buffers.header));
    this.#headerBits = new BigInt64Array(buffers.header);
    const lockWords = (this.lockWords = new Int32Array(buffers.lockWords));
    const access = this.access;
    const patience = (this.patience = new Patience(lockWords, lockTimeoutMillis));
    this.lock = new QueueLock(lockWords, patience, QUEUE_LOCK, access);
    this.signal = new WorkSignal(lockWords, access);
    this.finishes = new Finishes(lockWords, access);
    const arena = (this.arena = new Arena(buffers.arena, header));
    const slots = (this.slots = new SlotTable(buffers.slotWords, buffers, arena, access));
    this.rows = new RowTable(new Int32Array(buffers.rowWords), new Float64Array(buffers.rowData), buffers.rowRings, header, lockWords, access);
    this.helping = new Helping(this.rows, slots, patience);
    const overflow = new SharedHeap(buffers.overflow, header, HEAP_SIZE_OVERFLOW);
    const turns = (this.turns = new GroupTurns(new Float64Array(buffers.turns), header));
    this.ready = new ReadyIndex(new Int32Array(buffers.levelWords), new Float64Array(buffers.levelKeys), buffers.levelRings, lockWords, overflow, slots, access, turns);
    this.delayed = new SharedHeap(buffers.delayed, header, HEAP_SIZE_DELAYED);
    this.leases = new SharedHeap(buffers.leases, header, HEAP_SIZE_LEASES);
    this.finished = new FinishOrder(buffers.finished, header, HEAP_SIZE_FINISHED, FINISHED_HEAD);
    this.held = new SharedHeap(buffers.held, header, HEAP_SIZE_HELD);
    this.rateLimits = new RateLimitTable(new Float64Array(buffers.rateLimits), header, lockWords);
    this.retryPolicies = new RetryPolicyTable(new Float64Array(buffers.retryPolicies), header);
    this.concurrency = new ConcurrencyTable(new Int32Array(buffers.concurrency), lockWords, access);
    this.jobMap = new JobMap(new Int32Array(buffers.jobMap), slots);
    this.keyMap = new KeyMap(buffers.keyMap, slots, arena);
    this.freeSlots = new Int32Array(buffers.freeSlots);
    this.workerNames = new NameTable(buffers.workerNames, header, WORKER_NAME_COUNT);
    this.typeNames = new NameTable(buffers.typeNames, header, TYPE_NAME_COUNT);
    this.groupNames = new NameTable(buffers.groupNames, header, GROUP_NAME_COUNT);
    this.commits = new CommitRing(lockWords, new Float64Array(buffers.commitRing), patience, this.lock);
    this.awaited = new Int32Array(buffers.awaited);
    this.listing = new ListingIndex(buffers.listing, header, slots);
    this.events = new EventRing(buffers.eventRing, access);
    this.reservations = new ReservationTable(buffers.reservations, access);
  }

  /**
   * True while this instance is the only one that has the queue's memory:
   * an in-memory queue made by `new JobQueue` that has not been `share()`d.
   * No other thread can then read or write a word of it, so its moves need
   * no intent, its lock no word, its worker calls no CALL window, its words
   * no Atomics, and no call reads the clock twice to order itself against
   * another thread's (see Exclusive queues in layout.ts). `share()` ends it,
   * for good, between two calls.
   */
  get exclusive(): boolean {
    return this.access.exclusive;
  }

  set exclusive(exclusive: boolean) {
    if (exclusive) this.arena.keepStrings();
    else this.arena.publish();
    this.access.exclusive = exclusive;
  }

  /**
   * Whether some job was submitted in a flow (FLOWS): for the lock holder,
   * whose lock acquire ordered the first flow's `startFlows` before this plain read.
   */
  get flows(): boolean {
    return (this.lockWords[ATTENTION]! & FLOWS) !== 0;
  }

  /**
   * From now on, for the queue's life, every complete takes the lock (keeps I28): set by the lock
   * holder before the first child of a flow is placed, so a lock-free complete of that child, whose
   * claim came after the placement, reads it in RowTable#enter (seq-cst, the other side).
   */
  startFlows(): void {
    if (!this.flows) step.or(this.lockWords, ATTENTION, FLOWS);
  }

  /**
   * Whether nothing is due at `now` by NEXT_DUE, and `now` is not before the
   * last maintenance (a clock that went back): a lock-free call may go on.
   * Read only after ATTENTION: a holder marks NEXT_DUE DUE_PUBLISHING before
   * it clears DUE_LOWERED (relies on I14; Filing#publishDue), so a call that found the
   * flag clear reads that mark or the NEXT_DUE published after it.
   */
  nothingDueAt(now: number): boolean {
    if (this.access.exclusive) return now < this.header[NEXT_DUE]! && now >= this.header[LAST_NOW]!;
    if (this.#versionSeen() !== this.#timesVersion) this.#loadTimes();
    return now < this.#nextDue && now >= this.#lastNow;
  }

  /**
   * Whether maintenance is due by `now`: NEXT_DUE reached, or a lease
   * registered lock-free earlier than NEXT_DUE (DUE_LOWERED). The flag is
   * read first: a holder marks NEXT_DUE DUE_PUBLISHING before it clears the
   * flag (relies on I14; Filing#publishDue), so a reader that found it clear reads that
   * mark or the NEXT_DUE published after it.
   */
  dueBy(now: number): boolean {
    if ((this.access.load(this.lockWords, ATTENTION) & DUE_LOWERED) !== 0) return true;
    return now >= this.nextDue();
  }

  /**
   * Whether a lock holder that runs at an older time than `reading` may
   * still be at work: its moves, still to come, carry that older time, so a
   * lock-free call of this reading must not decide past them (it takes the
   * lock instead, and runs after them). Looked at before the call reads the
   * slots it decides on: a holder that takes the lock after that reads the
   * clock after this call did.
   *
   * Also true when such a holder has let go since the call first compared
   * its clock with NEXT_DUE, leaving maintenance due by `reading`: a lease it
   * made, stamped from its older reading, may have run out by this one, and
   * must be expired before this call decides (a poll would pass over the job:
   * the history checker found it in CI, where the claim's CAS came after the
   * other thread's poll had passed its first look at NEXT_DUE). Keeps I16.
   */
  holderBehind(reading: number): boolean {
    // The holder's time (LAST_NOW, written as it starts) first: the lock word's line is read only when the clock moved past it.
    if (this.exclusive || !(reading > this.lastNow())) return false;
    if (this.lock.taken()) return true;
    // Free: a holder that let go published NEXT_DUE before it did (the lock word's load above saw that release).
    return this.dueBy(reading);
  }

  /**
   * NEXT_DUE, read by any thread at any time: whole (keeps I15), or plainly
   * while the queue is exclusive. The lock holder writes it (setNextDue) as
   * lock-free calls read it.
   */
  nextDue(): number {
    if (this.access.exclusive) return this.header[NEXT_DUE]!;
    if (this.#versionSeen() !== this.#timesVersion) this.#loadTimes();
    return this.#nextDue;
  }

  /**
   * NEXT_DUE by a seq-cst read, for the lease handshake's reader, which must
   * read it after its own seq-cst store of a ring tail (keeps I14, with
   * Filing#publishDue): DUE_VERSION by an Atomics load.
   */
  nextDueInOrder(): number {
    if (this.access.exclusive) return this.header[NEXT_DUE]!;
    if (step.load(this.lockWords, DUE_VERSION) !== this.#timesVersion) this.#loadTimes();
    return this.#nextDue;
  }

  /** LAST_NOW, the lock holder's time, read by any thread at any time, as nextDue. */
  lastNow(): number {
    if (this.access.exclusive) return this.header[LAST_NOW]!;
    if (this.#versionSeen() !== this.#timesVersion) this.#loadTimes();
    return this.#lastNow;
  }

  /**
   * DUE_VERSION by a plain read, where the call has made a seq-cst access
   * before (its ATTENTION load): an Int32, so never torn, and ordered as the
   * plain reads of NEXT_DUE and LAST_NOW it replaces were. Racy: the lock
   * holder counts it.
   */
  #versionSeen(): number {
    step.racyRead();
    return this.lockWords[DUE_VERSION]!;
  }

  /**
   * Loads this thread's copies of NEXT_DUE and LAST_NOW again, once
   * DUE_VERSION (which the holder counts after each write of either) has
   * moved: whole, by Atomics loads of their bits (a BigInt each: tens of
   * nanoseconds, which a lock-free call would otherwise pay several times),
   * after a seq-cst load of the version they are then kept for, so that a copy
   * is never older than its version (I15; src/shm/README.md, The memory model).
   * Out of line: the callers stay small enough to inline.
   */
  #loadTimes(): void {
    const version = step.load(this.lockWords, DUE_VERSION);
    this.#nextDue = fromBits(step.load64(this.#headerBits, NEXT_DUE));
    this.#lastNow = fromBits(step.load64(this.#headerBits, LAST_NOW));
    this.#timesVersion = version;
  }

  /** The lock holder publishes NEXT_DUE: whole, by an Atomics store of its bits, then counted in DUE_VERSION (keeps I15). */
  setNextDue(ms: number): void {
    this.#setTime(NEXT_DUE, ms);
  }

  /** The lock holder writes its time, as setNextDue. */
  setLastNow(ms: number): void {
    this.#setTime(LAST_NOW, ms);
  }

  #setTime(field: typeof NEXT_DUE | typeof LAST_NOW, ms: number): void {
    if (this.access.exclusive) {
      this.header[field] = ms;
      return;
    }
    step.store64(this.#headerBits, field, toBits(ms));
    // After the store, before the holder's next look at what a handshake needs (ATTENTION, the rings' tails).
    step.add(this.lockWords, DUE_VERSION, 1);
  }

  /** New, all-zero buffers: an empty queue; `journaled`, with room for a journal's commits (see initialBytes in layout.ts). */
  static create(capacity: number, arenaBytes: number, journaled: boolean): QueueBuffers {
    const buffers = allocateBuffers(capacity, arenaBytes, journaled);
    const header = new Float64Array(buffers.header);
    // All zero is an empty queue, except that no time has been seen yet and nothing is due.
    header[LAST_NOW] = -Infinity;
    header[NEXT_DUE] = Infinity;
    return buffers;
  }
}
