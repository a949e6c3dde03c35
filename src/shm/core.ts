import { Refusal } from '../errors.js';
import type { RetryPolicy } from '../policy.js';
import { JobStatus, type Lease, type QueueStats } from '../types.js';
import { Arena } from './arena.js';
import {
  ATTEMPTS, AWAITED, CANCELLED, COMMIT_EVICTED, COMMIT_MOVED, COMMIT_SUBMITTED, COUNT_CANCELLED, COUNT_DEAD, COUNT_DELAYED, COUNT_PENDING, COUNT_RUNNING, COUNT_SUCCEEDED,
  DATA_REF, DEAD, ENTRY_FIELDS, ENTRY_K1, ENTRY_K2, ENTRY_K3, ENTRY_SLOT, ENTRY_WORD, ERROR_BYTES, ERROR_DROPPED, ERROR_EMPTY, ERROR_FAILED,
  ERROR_LEASE_EXPIRED, ERROR_NONE, ERROR_REF, FINISHED_CHUNKS, FINISHED_HEAD, FINISHED_TAIL, FINISH_SEQ, FINISH_SEQ_LAST, FREE, FREE_SLOT_COUNT, JOB_NUM, JOB_SEQ,
  LAST_NOW, LEASE_UNTIL, PAYLOAD_BYTES, PENDING, PRIORITY, REBUILDS, RING_FIELDS, RING_SLOT, RING_WORD, RUNNING,
  MOVES, RUN_AT, SLOT_HIGH_WATER, SUCCEEDED, TOKEN, TOKEN_RESERVED, TOKEN_SEQ, TYPE_BYTES, WHERE, WHERE_DELAYED, WHERE_NONE, WHERE_READY, WORKER,
  statusOf, type SlotStatus,
} from './layout.js';
import type { QueueMemory } from './memory.js';
import type { JournalWrites, LoggedJob, LoggedMove, MoveLog, Sequences } from './movelog.js';
import { markOf, ticketOfMark, type CommitKind } from './commits.js';
import type { SharedHeap } from './heap.js';
import { UndoLog, recordCopy, type UndoneMove } from './undo-log.js';

/** Thrown when a commit finds our lock taken over: the caller retries the whole operation. */
export class LockLost extends Error {}

/**
 * What cancel and retryDead return for a job frozen by another call's commit
 * in flight (see AWAITED in layout.ts): the caller waits for `awaitedTicket()`
 * to be durable, then tries again. Not a Refusal: it never reaches a user.
 */
export const AWAITS_COMMIT = -100;

const CANNED_ERRORS = new Map<number, string>([
  [ERROR_LEASE_EXPIRED, 'lease expired'],
  [ERROR_FAILED, 'failed'],
  [ERROR_DROPPED, '(error text dropped: no room left in the arena)'],
  [ERROR_EMPTY, ''],
]);

/** A job's fields as the core reads them, strings decoded. */
export interface JobRecord {
  jobNum: number;
  type: string;
  payload: string;
  priority: number;
  status: SlotStatus;
  attempts: number;
  runAt: number;
  lastError: string | null;
  token: number;
  leaseUntil: number;
  workerId: string | null;
}

/**
 * The queue's operations on shared memory. Every method runs with the queue
 * lock held (the caller takes it), so each sees and leaves a consistent queue.
 * Methods return a slot, a value, or a negative `Refusal`; they never throw
 * for a refused operation, and a refused operation has changed nothing.
 *
 * Data flows one way: the slot table decides (a CAS of the lease word commits
 * each move), then the hints follow (heaps, job map, counters, pools).
 */
export class QueueCore {
  readonly #m: QueueMemory;
  readonly #policy: RetryPolicy;
  readonly #log: MoveLog | undefined;
  /** The last commit ticket this thread's current call took (with a journal), or undefined. */
  #ticket: number | undefined;
  /** Whether the current call noted a change that must be committed before it returns. */
  #mustCommit = false;
  /** The current call's own durable moves, to undo if their commit fails (with a journal). */
  readonly #undo = new UndoLog();
  /** The ticket the last AWAITS_COMMIT waits for. */
  #awaitedTicket = 0;
  /** Whether the last poll passed over jobs frozen by commits in flight. */
  #skippedFrozen = false;

  constructor(memory: QueueMemory, policy: RetryPolicy, log?: MoveLog) {
    this.#m = memory;
    this.#policy = policy;
    this.#log = log;
  }

  /**
   * Starts an operation, right after the lock was taken, with the time `now`
   * read just before taking it (the clock is user code: it runs outside the
   * lock, so it cannot stall a holder). Returns the time the operation runs at.
   *
   * A `now` older than the latest time seen is read again: it is either a
   * thread that waited for the lock, or a clock that really went back, and
   * then pending jobs are re-sorted by a rebuild. With `repair`, the hints are
   * rebuilt first. Then the queue is brought up to now: leases with
   * leaseUntil <= now expire, in leaseUntil order, each as a failed attempt
   * at its leaseUntil; delayed jobs whose runAt has come become ready.
   */
  prepare(now: number, repair: boolean, readClock: () => number): number {
    const { header, slots, leases, delayed } = this.#m;
    if (now < header[LAST_NOW]!) {
      now = readClock();
      if (now < header[LAST_NOW]!) repair = true;
    }
    if (repair) this.rebuild(now);
    this.#assertHeld();
    this.#ticket = undefined;
    this.#mustCommit = false;
    this.#undo.reset();
    header[LAST_NOW] = now;
    while (leases.size > 0) {
      const slot = leases.top(ENTRY_SLOT);
      const word = leases.top(ENTRY_WORD);
      const until = leases.top(ENTRY_K1);
      if (slots.word(slot) === word && until > now) break;
      leases.pop();
      if (slots.word(slot) === word) this.#failAttempt(slot, until, ERROR_LEASE_EXPIRED, 0, now, false);
    }
    while (delayed.size > 0) {
      const slot = delayed.top(ENTRY_SLOT);
      const word = delayed.top(ENTRY_WORD);
      const runAt = delayed.top(ENTRY_K1);
      if (slots.word(slot) === word && runAt > now) break;
      delayed.pop();
      if (slots.word(slot) !== word) continue;
      header[COUNT_DELAYED]!--;
      this.#pushReady(slot, word);
    }
    if (this.#log !== undefined) this.#undo.record();
    return now;
  }

  submit(type: string, typeBytes: number, payload: string, payloadBytes: number, priority: number, runAt: number, now: number): number {
    const { header } = this.#m;
    const refusal = this.#makeRoom(Arena.chunksFor(typeBytes + payloadBytes), 1);
    if (refusal < 0) return refusal;
    const job: LoggedJob = {
      num: header[JOB_SEQ]! + 1, type, payload, priority, status: JobStatus.PENDING, attempts: 0, runAt,
      lastError: null, token: 0, leaseUntil: 0, finishSeq: 0, workerId: null, moves: 1,
    };
    header[JOB_SEQ] = job.num;
    const ticket = this.#note(job.num, COMMIT_SUBMITTED);
    const { slot, word } = this.#place(job, typeBytes, payloadBytes, this.#undoable() ? markOf(ticket) : 0);
    if (this.#undoable()) this.#undo.add({ slot, status: FREE, to: word, record: null, lastError: null });
    header[COUNT_PENDING]!++;
    this.#enqueue(slot, word, now);
    return job.num;
  }

  /**
   * Room for `jobs` (as many slots, and chunks for their strings), evicting
   * finished jobs only if that makes enough: 0, or the Refusal that nothing
   * was evicted for.
   */
  roomFor(jobs: number, chunks: number): number {
    // Every note of a batch (its jobs, and the evictions that make their room) must fit the commit ring
    // without a commit in between, so that the batch reaches the journal in one transaction.
    if (this.#log !== undefined && this.#m.commits.room() < this.#m.slots.capacity + jobs) this.#commitNotes();
    return this.#makeRoom(chunks, jobs);
  }

  /**
   * Puts journaled jobs back into an empty queue (a RUNNING one must come
   * already turned back to PENDING), continues the sequences, and derives
   * every hint. The caller has made sure they fit.
   */
  restore(jobs: readonly LoggedJob[], sequences: Sequences, now: number): void {
    const { header } = this.#m;
    for (const job of jobs) {
      this.#place(job, Buffer.byteLength(job.type), Buffer.byteLength(job.payload));
      header[FINISH_SEQ_LAST] = Math.max(header[FINISH_SEQ_LAST]!, job.finishSeq);
    }
    header[JOB_SEQ] = sequences.jobSeq;
    header[TOKEN_SEQ] = sequences.tokenSeq;
    header[TOKEN_RESERVED] = sequences.tokenSeq;
    this.rebuild(now);
  }

  /** Leases the best ready job to `workerId`; returns its slot, or -1 if nothing is ready. */
  poll(workerId: string, leaseMillis: number, now: number): number {
    const { header, slots, ready, leases } = this.#m;
    // Reserved before any entry is taken off the heap: a journal that refuses the reservation leaves the queue as it was.
    if (ready.size > 0) this.#reserveToken();
    let frozen: number[] | undefined;
    let leased = -1;
    this.#skippedFrozen = false;
    while (ready.size > 0) {
      const slot = ready.top(ENTRY_SLOT);
      const word = ready.top(ENTRY_WORD);
      if (slots.word(slot) === word && this.#frozen(slot)) {
        // Its submit (or retry) is still committing: put back after the poll, in the same place.
        (frozen ??= []).push(ready.top(ENTRY_K1), ready.top(ENTRY_K2), ready.top(ENTRY_K3), slot, word);
        ready.pop();
        continue;
      }
      ready.pop();
      // Stale entry: the job was cancelled, or moved on since it was queued.
      if (slots.word(slot) !== word) continue;
      this.#begin(slot);
      const token = ++header[TOKEN_SEQ]!;
      const leaseUntil = now + leaseMillis;
      slots.set(slot, ATTEMPTS, slots.get(slot, ATTEMPTS) + 1);
      slots.set(slot, TOKEN, token);
      slots.set(slot, LEASE_UNTIL, leaseUntil);
      slots.set(slot, WHERE, WHERE_NONE);
      slots.set(slot, WORKER, this.#m.workerNames.numberOf(workerId));
      // The claim: CAS of the lease word from the PENDING word the entry was made for.
      const next = this.#move(slot, word, RUNNING, LAZY);
      header[COUNT_PENDING]!--;
      header[COUNT_RUNNING]!++;
      this.#push(leases, leaseUntil, token, 0, slot, next);
      leased = slot;
      break;
    }
    this.#skippedFrozen = frozen !== undefined;
    for (let at = 0; frozen !== undefined && at < frozen.length; at += ENTRY_FIELDS) {
      this.#push(ready, frozen[at + ENTRY_K1]!, frozen[at + ENTRY_K2]!, frozen[at + ENTRY_K3]!, frozen[at + ENTRY_SLOT]!, frozen[at + ENTRY_WORD]!);
    }
    return leased;
  }

  /** The slot of job number `n`, or a Refusal. */
  find(n: number): number {
    const { header, jobMap } = this.#m;
    if (n > header[JOB_SEQ]!) return Refusal.NotFound;
    const hinted = jobMap.get(n);
    if (hinted >= 0 && this.#holds(hinted, n)) return hinted;
    // The map is a hint: before calling a job gone, ask the slots themselves.
    for (let slot = 0; slot < header[SLOT_HIGH_WATER]!; slot++) {
      this.#progress(slot);
      if (this.#holds(slot, n)) {
        jobMap.set(n, slot);
        return slot;
      }
    }
    return Refusal.Evicted;
  }

  #holds(slot: number, n: number): boolean {
    const slots = this.#m.slots;
    return slots.get(slot, JOB_NUM) === n && slots.status(slot) !== FREE;
  }

  /** 0 if the token is the slot's current, valid lease, else StaleLease. After `sweep`, RUNNING means valid. */
  checkLease(slot: number, token: number): number {
    const { slots } = this.#m;
    return slots.status(slot) === RUNNING && slots.get(slot, TOKEN) === token ? 0 : Refusal.StaleLease;
  }

  complete(slot: number, token: number): number {
    const refused = this.checkLease(slot, token);
    if (refused < 0) return refused;
    this.#finish(slot, SUCCEEDED, COUNT_RUNNING, COUNT_SUCCEEDED);
    return 0;
  }

  /** A failed attempt now; `permanent` dead-letters the job whatever attempts are left. */
  fail(slot: number, token: number, error: string | null, permanent: boolean, now: number): number {
    const refused = this.checkLease(slot, token);
    if (refused < 0) return refused;
    const ref = error === null ? ERROR_FAILED : this.#storeError(error);
    this.#failAttempt(slot, now, ref, ref > 0 ? Buffer.byteLength(error!) : 0, now, permanent);
    return 0;
  }

  /** Returns the new leaseUntil, or a Refusal. */
  extend(slot: number, token: number, leaseMillis: number, now: number): number {
    const refused = this.checkLease(slot, token);
    if (refused < 0) return refused;
    const { slots, leases } = this.#m;
    const word = this.#begin(slot);
    const leaseUntil = now + leaseMillis;
    slots.set(slot, LEASE_UNTIL, leaseUntil);
    const next = this.#move(slot, word, RUNNING, LAZY);
    this.#push(leases, leaseUntil, token, 0, slot, next);
    return leaseUntil;
  }

  /**
   * Hands a lease back unfinished (its worker is shutting down): PENDING,
   * ready at `now`, the attempt not counted, lastError kept. The token is
   * refused from then on, as after any move off RUNNING.
   */
  release(slot: number, token: number, now: number): number {
    const refused = this.checkLease(slot, token);
    if (refused < 0) return refused;
    this.#readyAgain(slot, this.#m.slots.get(slot, ATTEMPTS) - 1, COUNT_RUNNING, now);
    return 0;
  }

  cancel(slot: number): number {
    const { header, slots } = this.#m;
    if (slots.status(slot) !== PENDING) return Refusal.NotPending;
    if (this.#frozen(slot)) return this.#awaitCommitOf(slot);
    if (slots.get(slot, WHERE) === WHERE_DELAYED) header[COUNT_DELAYED]!--;
    this.#finish(slot, CANCELLED, COUNT_PENDING, COUNT_CANCELLED);
    return 0;
  }

  retryDead(slot: number, now: number): number {
    if (this.#m.slots.status(slot) !== DEAD) return Refusal.NotDead;
    if (this.#frozen(slot)) return this.#awaitCommitOf(slot);
    this.#readyAgain(slot, 0, COUNT_DEAD, now);
    return 0;
  }

  /** Back to PENDING, ready at `now`, with `attempts`, from the status `fromCount` counts. */
  #readyAgain(slot: number, attempts: number, fromCount: number, now: number): void {
    const { header, slots } = this.#m;
    const word = this.#begin(slot);
    slots.set(slot, ATTEMPTS, attempts);
    slots.set(slot, RUN_AT, now);
    const next = this.#move(slot, word, PENDING);
    header[fromCount]!--;
    header[COUNT_PENDING]!++;
    this.#enqueue(slot, next, now);
  }

  /** The lease a poll just made on `slot`: only the fields a worker needs. */
  lease(slot: number): Lease {
    const { slots } = this.#m;
    return {
      jobId: `J${slots.get(slot, JOB_NUM)}`,
      token: slots.get(slot, TOKEN),
      ...this.#content(slot),
      attempt: slots.get(slot, ATTEMPTS),
      leaseUntil: slots.get(slot, LEASE_UNTIL),
    };
  }

  read(slot: number): JobRecord {
    const { slots } = this.#m;
    return {
      jobNum: slots.get(slot, JOB_NUM),
      ...this.#content(slot),
      priority: slots.get(slot, PRIORITY),
      status: slots.status(slot),
      attempts: slots.get(slot, ATTEMPTS),
      runAt: slots.get(slot, RUN_AT),
      lastError: this.#errorText(slot),
      token: slots.get(slot, TOKEN),
      leaseUntil: slots.get(slot, LEASE_UNTIL),
      workerId: this.#m.workerNames.nameOf(slots.get(slot, WORKER)),
    };
  }

  /** Slots of every DEAD job, in submission order. */
  deadSlots(): number[] {
    const { header, slots } = this.#m;
    const dead: number[] = [];
    for (let slot = 0; slot < header[SLOT_HIGH_WATER]!; slot++) {
      this.#progress(slot);
      if (slots.status(slot) === DEAD) dead.push(slot);
    }
    return dead.sort((a, b) => slots.get(a, JOB_NUM) - slots.get(b, JOB_NUM));
  }

  stats(): QueueStats {
    const h = this.#m.header;
    const pending = h[COUNT_PENDING]!;
    const delayed = h[COUNT_DELAYED]!;
    return {
      pending,
      ready: pending - delayed,
      delayed,
      running: h[COUNT_RUNNING]!,
      succeeded: h[COUNT_SUCCEEDED]!,
      dead: h[COUNT_DEAD]!,
      cancelled: h[COUNT_CANCELLED]!,
    };
  }

  /** How often the hints were rebuilt from the slots (a dead lock holder, or a clock that went back). */
  get rebuilds(): number {
    return this.#m.header[REBUILDS]!;
  }

  /**
   * Re-derives every hint from the slot table: rolls back a half-done move,
   * then recounts, re-sorts pending jobs by `now`, re-indexes leases, job
   * numbers, free slots and finished jobs, and reclaims unreferenced arena
   * blocks. O(capacity); run after taking over a dead holder's lock.
   */
  rebuild(now: number): void {
    const m = this.#m;
    const { header, slots } = m;
    this.#assertHeld();
    slots.recover();
    for (const f of [COUNT_PENDING, COUNT_DELAYED, COUNT_RUNNING, COUNT_SUCCEEDED, COUNT_DEAD, COUNT_CANCELLED]) header[f] = 0;
    m.ready.clear();
    m.delayed.clear();
    m.leases.clear();
    m.jobMap.clear();
    header[FREE_SLOT_COUNT] = 0;
    header[FINISHED_CHUNKS] = 0;
    const finished: number[] = [];
    const chains: number[] = [];
    for (let slot = 0; slot < header[SLOT_HIGH_WATER]!; slot++) {
      this.#progress(slot);
      const word = slots.word(slot);
      const status = statusOf(word);
      if (status === FREE) {
        m.freeSlots[header[FREE_SLOT_COUNT]!++] = slot;
        continue;
      }
      m.jobMap.set(slots.get(slot, JOB_NUM), slot);
      chains.push(slots.get(slot, DATA_REF), slots.get(slot, TYPE_BYTES) + slots.get(slot, PAYLOAD_BYTES));
      chains.push(slots.get(slot, ERROR_REF), slots.get(slot, ERROR_BYTES));
      header[COUNT_BY_STATUS[status]]!++;
      if (status === PENDING) this.#enqueue(slot, word, now);
      else if (status === RUNNING) m.leases.push(slots.get(slot, LEASE_UNTIL), slots.get(slot, TOKEN), 0, slot, word);
      else if (status === SUCCEEDED || status === CANCELLED) {
        finished.push(slot);
        header[FINISHED_CHUNKS]! += this.#chunksOf(slot);
      }
    }
    finished.sort((a, b) => slots.get(a, FINISH_SEQ) - slots.get(b, FINISH_SEQ));
    header[FINISHED_HEAD] = 0;
    header[FINISHED_TAIL] = 0;
    for (const slot of finished) this.#ringPush(slot, slots.word(slot));
    m.arena.rebuild(chains);
    header[REBUILDS]!++;
    header[LAST_NOW] = now;
  }

  // ── moves ──────────────────────────────────────────────────────────────

  /** A new job in a free slot, in the job's status, with an AWAITED mark (or 0); hints (counters, heaps) are the caller's. */
  #place(job: LoggedJob, typeBytes: number, payloadBytes: number, awaited = 0): { slot: number; word: number } {
    const { slots, arena, jobMap, workerNames } = this.#m;
    const errorRef = job.lastError === null ? ERROR_NONE : this.#storeError(job.lastError);
    const slot = this.#takeSlot();
    this.#assertHeld();
    const ref = arena.store(typeBytes + payloadBytes, job.type, job.payload);
    const word = this.#begin(slot);
    slots.set(slot, JOB_NUM, job.num);
    slots.set(slot, PRIORITY, job.priority);
    slots.set(slot, RUN_AT, job.runAt);
    slots.set(slot, ATTEMPTS, job.attempts);
    slots.set(slot, TOKEN, job.token);
    slots.set(slot, LEASE_UNTIL, job.leaseUntil);
    slots.set(slot, DATA_REF, ref);
    slots.set(slot, TYPE_BYTES, typeBytes);
    slots.set(slot, PAYLOAD_BYTES, payloadBytes);
    slots.set(slot, ERROR_REF, errorRef);
    slots.set(slot, ERROR_BYTES, errorRef > 0 ? Buffer.byteLength(job.lastError!) : 0);
    slots.set(slot, FINISH_SEQ, job.finishSeq);
    slots.set(slot, WHERE, WHERE_NONE);
    slots.set(slot, WORKER, job.workerId === null ? 0 : workerNames.numberOf(job.workerId));
    slots.set(slot, MOVES, job.moves - 1); // the commit counts this move
    slots.set(slot, AWAITED, awaited);
    const next = this.#commit(slot, word, STATUS_OF_NAME[job.status]);
    jobMap.set(job.num, slot);
    return { slot, word: next };
  }

  /**
   * With a journal, makes sure the next token is reserved there: tokens are
   * reserved in blocks, so none repeats after a crash. Counted as reserved
   * only once the journal has it.
   */
  #reserveToken(): void {
    const { header } = this.#m;
    if (this.#log === undefined || header[TOKEN_SEQ]! < header[TOKEN_RESERVED]!) return;
    const reserved = header[TOKEN_SEQ]! + 1 + TOKEN_BLOCK;
    this.#log.reserve({ jobSeq: header[JOB_SEQ]!, tokenSeq: reserved });
    header[TOKEN_RESERVED] = reserved;
  }

  // ── journal ──────────────────────────────────────────────────────────

  /** The last commit ticket the current call took, if it changed anything the journal must learn. */
  noted(): number | undefined {
    return this.#ticket;
  }

  /**
   * Whether the current call changed what a crash would bring back, so must
   * not return before the commit: everything but a lease, an extended lease
   * and an eviction. Those three are LAZY: lost in a crash they change nothing
   * that matters, as a job RUNNING at a crash runs again anyway and an evicted
   * job was finished.
   */
  mustCommit(): boolean {
    return this.#mustCommit;
  }

  /**
   * Notes a change for the journal (if there is one), to be written by the
   * next group commit; see CommitRing. Noted just *before* the move commits:
   * a thread killed in between leaves a note of a move that did not happen
   * (the journal is written the job as it is: harmless), never a move the
   * journal does not learn of. No commit can come in between, as commits
   * read under the lock. A full ring is committed here, under the lock: rare,
   * as every durable call commits the ring soon after.
   */
  #note(jobNum: number, kind: CommitKind, lazy = false): number {
    if (this.#log === undefined) return 0;
    const commits = this.#m.commits;
    if (commits.room() < 1) this.#commitNotes();
    this.#ticket = commits.note(jobNum, kind);
    if (!lazy) this.#mustCommit = true;
    return this.#ticket;
  }

  /**
   * The journal writes every noted change needs, each job once, as it is
   * now (under the lock, so every job is read between moves); and the ticket
   * they cover. A new job is inserted whole, a moved one updated, an evicted
   * one deleted.
   */
  pendingWrites(): { writes: JournalWrites; upTo: number } {
    const flagsOf = new Map<number, number>();
    const upTo = this.#m.commits.forEachPending((jobNum, kind) => {
      flagsOf.set(jobNum, (flagsOf.get(jobNum) ?? 0) | FLAG_OF_KIND[kind]);
    });
    const writes: JournalWrites = { inserts: [], updates: [], evictions: [] };
    for (const [jobNum, flags] of flagsOf) {
      const slot = (flags & GONE) !== 0 ? Refusal.Evicted : this.find(jobNum);
      // Gone from memory: evicted, or a submit that was undone. Its row goes, if it was ever written.
      if (slot < 0) {
        writes.evictions.push(jobNum);
        continue;
      }
      if ((flags & NEW) === 0) writes.updates.push(this.#loggedMove(slot));
      else writes.inserts.push(this.#loggedJob(slot));
    }
    return { writes, upTo };
  }

  /** Commits every noted change now, under the lock. */
  #commitNotes(): void {
    const { writes, upTo } = this.pendingWrites();
    this.#log!.write(writes);
    this.#m.commits.publish(upTo);
  }

  #loggedJob(slot: number): LoggedJob {
    return { ...this.#loggedMove(slot), ...this.#content(slot), priority: this.#m.slots.get(slot, PRIORITY) };
  }

  /** The job's type and payload, decoded from its arena chain (type bytes first). */
  #content(slot: number): { type: string; payload: string } {
    const { slots, arena } = this.#m;
    const ref = slots.get(slot, DATA_REF);
    const typeBytes = slots.get(slot, TYPE_BYTES);
    return { type: arena.read(ref, 0, typeBytes), payload: arena.read(ref, typeBytes, slots.get(slot, PAYLOAD_BYTES)) };
  }

  #loggedMove(slot: number): LoggedMove {
    const slots = this.#m.slots;
    return {
      num: slots.get(slot, JOB_NUM),
      status: NAME_OF_STATUS[slots.status(slot)],
      attempts: slots.get(slot, ATTEMPTS),
      runAt: slots.get(slot, RUN_AT),
      lastError: this.#errorText(slot),
      token: slots.get(slot, TOKEN),
      leaseUntil: slots.get(slot, LEASE_UNTIL),
      finishSeq: slots.get(slot, FINISH_SEQ),
      workerId: this.#m.workerNames.nameOf(slots.get(slot, WORKER)),
      moves: slots.get(slot, MOVES),
    };
  }

  #errorText(slot: number): string | null {
    const { slots } = this.#m;
    return this.#errorTextOf(slots.get(slot, ERROR_REF), slots.get(slot, ERROR_BYTES));
  }

  #errorTextOf(errorRef: number, errorBytes: number): string | null {
    return errorRef > 0 ? this.#m.arena.read(errorRef, 0, errorBytes) : (CANNED_ERRORS.get(errorRef) ?? null);
  }

  /** Inside a long scan, now and then shows the waiters that this holder is alive. */
  #progress(step: number): void {
    if ((step & 0xfff) === 0 && !this.#m.lock.touch()) throw new LockLost();
  }

  /** Shared writes outside the hints (records, arena chains) first check that the lock is still ours. */
  #assertHeld(): void {
    if (!this.#m.lock.held()) throw new LockLost();
  }

  /**
   * Both ends of a move check that the lock is still ours: a holder presumed
   * dead (it stalled past the lock timeout) must not edit or commit a record
   * over the taker's repairs.
   */
  #begin(slot: number): number {
    this.#assertHeld();
    return this.#m.slots.begin(slot);
  }

  /**
   * A move the journal learns of: noted, then committed. A durable move of
   * the call's own (see UndoLog) is frozen until its commit (AWAITED) and
   * logged with the record it replaces.
   */
  #move(slot: number, word: number, status: SlotStatus, lazy = false): number {
    const { slots } = this.#m;
    const ticket = this.#note(slots.get(slot, JOB_NUM), COMMIT_MOVED, lazy);
    if (lazy || !this.#undoable()) {
      slots.set(slot, AWAITED, 0);
      return this.#commit(slot, word, status);
    }
    slots.set(slot, AWAITED, markOf(ticket));
    // The published record is still the old one: the move so far is staged.
    const record = recordCopy(slots.records, slot);
    // Only an arena chain needs its text saved (the move may free it); a canned error is its ref.
    const lastError = record[ERROR_REF]! > 0 ? this.#errorTextOf(record[ERROR_REF]!, record[ERROR_BYTES]!) : null;
    const next = this.#commit(slot, word, status);
    this.#undo.add({ slot, status: statusOf(word), to: next, record, lastError });
    return next;
  }

  /** Whether the current move is one of the call's own that a failed commit must undo. */
  #undoable(): boolean {
    return this.#undo.recording;
  }

  /** Whether the job in `slot` is frozen by a commit in flight (see AWAITED in layout.ts). */
  #frozen(slot: number): boolean {
    return this.#log !== undefined && this.#m.commits.awaits(this.#m.slots.get(slot, AWAITED));
  }

  #awaitCommitOf(slot: number): number {
    this.#awaitedTicket = ticketOfMark(this.#m.slots.get(slot, AWAITED));
    return AWAITS_COMMIT;
  }

  /** Whether the last poll passed over jobs frozen by commits in flight (see AWAITED in layout.ts). */
  skippedFrozen(): boolean {
    return this.#skippedFrozen;
  }

  /** The commit the last AWAITS_COMMIT waits for. */
  awaitedTicket(): number {
    return this.#awaitedTicket;
  }

  /** Takes the current call's own durable moves out (see UndoLog), for `rollBack` if their commit fails. */
  takeUndo(): UndoneMove[] {
    return this.#undo.take();
  }

  /**
   * Undoes a call's own moves whose commit failed, newest first: a submitted
   * job's slot is freed, a moved job gets its old record (and lastError)
   * back. Each undo is a move of its own, with a new version and a higher move
   * count, and is noted (lazily): the next commit writes the job as it now
   * is, or deletes its row, over anything a presumed-dead leader may still
   * write. Then every hint is rebuilt from the slots (counters, heaps, the
   * arena's chains): O(capacity), on a failure only.
   *
   * A move whose slot no longer holds its word is left alone (only a
   * presumed-dead holder's repairs can have moved a frozen job). Also run
   * after a failure under the lock with no moves to undo, for its rebuild
   * (the failure may have cut a call short between its hints).
   */
  rollBack(moves: readonly UndoneMove[], now: number): void {
    const { slots } = this.#m;
    // A move the failure interrupted was only staged: nothing of it is published.
    slots.abandon();
    for (const move of moves) {
      if (slots.word(move.slot) !== move.to) continue;
      this.#note(slots.get(move.slot, JOB_NUM), COMMIT_MOVED, LAZY);
      if (move.record === null) {
        this.#assertHeld();
        if (slots.release(move.slot, move.to) < 0) throw new LockLost();
        continue;
      }
      const errorRef = move.lastError === null ? move.record[ERROR_REF]! : this.#storeError(move.lastError);
      const moves = slots.get(move.slot, MOVES);
      const word = this.#begin(move.slot);
      for (let field = 0; field < move.record.length; field++) slots.set(move.slot, field, move.record[field]!);
      slots.set(move.slot, ERROR_REF, errorRef);
      if (errorRef <= 0) slots.set(move.slot, ERROR_BYTES, 0);
      slots.set(move.slot, MOVES, moves);
      slots.set(move.slot, AWAITED, 0);
      this.#commit(move.slot, word, move.status);
    }
    this.rebuild(now);
  }

  #commit(slot: number, word: number, status: SlotStatus): number {
    this.#assertHeld();
    const next = this.#m.slots.commit(slot, word, status);
    if (next < 0) throw new LockLost();
    return next;
  }

  /** A failed attempt at `failedAt`: back to PENDING after the backoff, or DEAD when no attempts are left (or `permanent`). */
  #failAttempt(slot: number, failedAt: number, errorRef: number, errorBytes: number, now: number, permanent: boolean): void {
    const { header, slots, arena } = this.#m;
    const word = this.#begin(slot);
    const attempts = slots.get(slot, ATTEMPTS);
    const oldError = slots.get(slot, ERROR_REF);
    const oldErrorBytes = slots.get(slot, ERROR_BYTES);
    slots.set(slot, ERROR_REF, errorRef);
    slots.set(slot, ERROR_BYTES, errorBytes);
    header[COUNT_RUNNING]!--;
    if (!permanent && attempts < this.#policy.maxAttempts) {
      slots.set(slot, RUN_AT, failedAt + this.#policy.backoffAfter(attempts));
      const next = this.#move(slot, word, PENDING);
      header[COUNT_PENDING]!++;
      this.#enqueue(slot, next, now);
    } else {
      this.#move(slot, word, DEAD);
      header[COUNT_DEAD]!++;
    }
    // Freed only after the commit: a rolled-back move must still find its old error.
    arena.free(oldError, oldErrorBytes);
  }

  /** A move to a finished state (SUCCEEDED, CANCELLED): evictable from now on, oldest first. */
  #finish(slot: number, status: SlotStatus, fromCount: number, toCount: number): void {
    const { header, slots } = this.#m;
    const word = this.#begin(slot);
    slots.set(slot, FINISH_SEQ, ++header[FINISH_SEQ_LAST]!);
    slots.set(slot, WHERE, WHERE_NONE);
    const next = this.#move(slot, word, status);
    header[fromCount]!--;
    header[toCount]!++;
    header[FINISHED_CHUNKS]! += this.#chunksOf(slot);
    this.#ringPush(slot, next);
  }

  // ── hints ──────────────────────────────────────────────────────────────

  /** Files a PENDING job in the ready heap, or the delayed heap if its runAt is still to come. */
  #enqueue(slot: number, word: number, now: number): void {
    const { header, slots, delayed } = this.#m;
    const runAt = slots.get(slot, RUN_AT);
    if (runAt <= now) {
      this.#pushReady(slot, word);
    } else {
      slots.setHint(slot, WHERE, WHERE_DELAYED);
      header[COUNT_DELAYED]!++;
      this.#push(delayed, runAt, slots.get(slot, JOB_NUM), 0, slot, word);
    }
  }

  /** Ready order: highest priority, then earliest runAt, then submission order. */
  #pushReady(slot: number, word: number): void {
    const { slots, ready } = this.#m;
    slots.setHint(slot, WHERE, WHERE_READY);
    this.#push(ready, -slots.get(slot, PRIORITY), slots.get(slot, RUN_AT), slots.get(slot, JOB_NUM), slot, word);
  }

  #push(heap: SharedHeap, k1: number, k2: number, k3: number, slot: number, word: number): void {
    const slots = this.#m.slots;
    // Full means mostly stale entries (a slot has at most one valid entry per heap): drop them.
    if (heap.full) heap.compact((s, w) => slots.word(s) === w);
    heap.push(k1, k2, k3, slot, word);
  }

  #ringPush(slot: number, word: number): void {
    const { header, finished, slots } = this.#m;
    const at = (header[FINISHED_TAIL]! % slots.capacity) * RING_FIELDS;
    finished[at + RING_SLOT] = slot;
    finished[at + RING_WORD] = word;
    header[FINISHED_TAIL]!++;
  }

  // ── room ───────────────────────────────────────────────────────────────

  /**
   * Makes room for `chunks` arena chunks and `jobs` slots, evicting finished
   * jobs oldest first — but only if that will succeed: a refusal evicts nothing.
   */
  #makeRoom(chunks: number, jobs: number): number {
    const { header, arena, slots } = this.#m;
    const freeSlots = () => header[FREE_SLOT_COUNT]! + slots.capacity - header[SLOT_HIGH_WATER]!;
    const finishedJobs = header[COUNT_SUCCEEDED]! + header[COUNT_CANCELLED]!;
    if (jobs > freeSlots() + finishedJobs) return Refusal.NoSlot;
    if (chunks > arena.freeChunks + header[FINISHED_CHUNKS]!) return Refusal.NoBytes;
    while (freeSlots() < jobs || chunks > arena.freeChunks) {
      // Only if the counters lied (they are hints): refuse rather than loop.
      if (!this.#evictOldest()) return Refusal.NoBytes;
    }
    return 0;
  }

  #takeSlot(): number {
    const { header, freeSlots } = this.#m;
    if (header[FREE_SLOT_COUNT]! === 0) return header[SLOT_HIGH_WATER]!++;
    return freeSlots[--header[FREE_SLOT_COUNT]!]!;
  }

  /** Arena chunks holding `error`, or a canned error: ERROR_EMPTY, or ERROR_DROPPED if there is no room. */
  #storeError(error: string): number {
    const bytes = Buffer.byteLength(error);
    if (bytes === 0) return ERROR_EMPTY;
    if (this.#makeRoom(Arena.chunksFor(bytes), 0) < 0) return ERROR_DROPPED;
    this.#assertHeld();
    return this.#m.arena.store(bytes, error);
  }

  #chunksOf(slot: number): number {
    const slots = this.#m.slots;
    const errorChunks = slots.get(slot, ERROR_REF) > 0 ? Arena.chunksFor(slots.get(slot, ERROR_BYTES)) : 0;
    return Arena.chunksFor(slots.get(slot, TYPE_BYTES) + slots.get(slot, PAYLOAD_BYTES)) + errorChunks;
  }

  /**
   * Evicts the finished job that finished first; false if there is none. A
   * job frozen by its commit in flight is passed over and goes to the back
   * of the ring (it has just finished, so it is among the youngest anyway).
   */
  #evictOldest(): boolean {
    const { header, finished, slots, arena, jobMap, freeSlots } = this.#m;
    for (let looks = header[FINISHED_TAIL]! - header[FINISHED_HEAD]!; looks > 0; looks--) {
      const at = (header[FINISHED_HEAD]! % slots.capacity) * RING_FIELDS;
      const slot = finished[at + RING_SLOT]!;
      const word = finished[at + RING_WORD]!;
      header[FINISHED_HEAD]!++;
      if (slots.word(slot) !== word) continue;
      if (this.#frozen(slot)) {
        this.#ringPush(slot, word);
        continue;
      }
      const dataRef = slots.get(slot, DATA_REF);
      const dataBytes = slots.get(slot, TYPE_BYTES) + slots.get(slot, PAYLOAD_BYTES);
      const errorRef = slots.get(slot, ERROR_REF);
      const errorBytes = slots.get(slot, ERROR_BYTES);
      const jobNum = slots.get(slot, JOB_NUM);
      header[FINISHED_CHUNKS]! -= this.#chunksOf(slot);
      this.#assertHeld();
      this.#note(jobNum, COMMIT_EVICTED, LAZY);
      if (slots.release(slot, word) < 0) throw new LockLost();
      header[COUNT_BY_STATUS[statusOf(word)]]!--;
      arena.free(dataRef, dataBytes);
      arena.free(errorRef, errorBytes);
      jobMap.delete(jobNum);
      freeSlots[header[FREE_SLOT_COUNT]!++] = slot;
      return true;
    }
    return false;
  }
}

/** Marks a note no call waits for: see `mustCommit`. */
const LAZY = true;

/** What the journal must do for a job, by the kinds of its notes: insert it whole (NEW), delete it (GONE), else update it. */
const NEW = 1;
const GONE = 2;
const FLAG_OF_KIND: Record<CommitKind, number> = { [COMMIT_SUBMITTED]: NEW, [COMMIT_MOVED]: 0, [COMMIT_EVICTED]: GONE };

/** Tokens reserved in the journal at a time. */
const TOKEN_BLOCK = 4096;

const STATUS_OF_NAME: Record<JobStatus, SlotStatus> = {
  PENDING, RUNNING, SUCCEEDED, DEAD, CANCELLED,
};
/** The public name of each slot status (FREE has none: a free slot holds no job). */
export const NAME_OF_STATUS = ['FREE', JobStatus.PENDING, JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED] as unknown as Record<SlotStatus, JobStatus>;

const COUNT_BY_STATUS: Record<SlotStatus, number> = {
  [FREE]: -1,
  [PENDING]: COUNT_PENDING,
  [RUNNING]: COUNT_RUNNING,
  [SUCCEEDED]: COUNT_SUCCEEDED,
  [DEAD]: COUNT_DEAD,
  [CANCELLED]: COUNT_CANCELLED,
};
