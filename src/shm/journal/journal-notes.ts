import { markOf, ticketOfMark, type CommitKind } from './commits.js';
import { COMMIT_EVICTED, COMMIT_MOVED, COMMIT_SUBMITTED, ERROR_REF, FREE, JOB_NUM, LAST_NOW, RUNNING, nextWord, statusOf, type SlotStatus } from '../memory/layout.js';
import type { QueueMemory } from '../queue-memory.js';
import type { JournalWrites, MoveLog } from './movelog.js';
import type { Records } from '../records.js';
import { UndoLog, recordCopy, type Undo } from './undo-log.js';
import type { MoveNotes } from '../moves/worker-path.js';

/**
 * What cancel and retryDead return for a job frozen by another call's commit
 * in flight (keeps I21): the caller waits for
 * `awaitedTicket()` to be durable, then tries again. Not a Refusal: it never
 * reaches a user.
 */
export const AWAITS_COMMIT = -1000;

/** Marks a note no call waits for: see `mustCommit`. */
export const LAZY = true;

/** Where the journal's writes find a noted job: the slot of job number `n`, or a Refusal (see Maintenance#find). */
export interface JobFinder {
  find(n: number): number;
}

/**
 * The journal's side of the calls under the maintenance lock (with a
 * journal; without one, nothing is noted and no job is frozen): the changes
 * each call notes for the next group commit (see CommitRing), and whether it
 * must wait for that commit; its own durable moves, frozen until their
 * commit (I21) and logged to be undone if it fails
 * (see UndoLog); and the commit a call must wait for before it can build on
 * a frozen job.
 */
export class JournalNotes implements MoveNotes {
  readonly #m: QueueMemory;
  /** For the journal's rows of a job, and the lastError an undo puts back. */
  readonly #records: Records;
  readonly #jobs: JobFinder;
  readonly #log: MoveLog | undefined;
  /** The last commit ticket this thread's current call took (with a journal), or undefined. */
  #ticket: number | undefined;
  /** Whether the current call noted a change that must be committed before it returns. */
  #mustCommit = false;
  /** The current call's own durable moves, to undo if their commit fails (with a journal). */
  readonly #undo = new UndoLog();
  /** The ticket the last AWAITS_COMMIT waits for. */
  #awaitedTicket = 0;

  constructor(memory: QueueMemory, records: Records, jobs: JobFinder, log?: MoveLog) {
    this.#m = memory;
    this.#records = records;
    this.#jobs = jobs;
    this.#log = log;
  }

  /** Starts a locked call: no ticket taken, nothing to commit; with a journal, no move to undo yet. */
  startCall(): void {
    this.#ticket = undefined;
    this.#mustCommit = false;
    if (this.#log !== undefined) this.#undo.reset();
  }

  /** From now on (after the call's catch-up), the call's durable moves are its own: logged, to be undone if their commit fails. */
  recordOwnMoves(): void {
    this.#undo.record();
  }

  /**
   * Notes a lazy move (a lease, an extend) of the job in `slot`, about to go
   * from `word` to `status`. One made after a durable move of the call's own
   * (the lease of a locked completeAndPoll, after its complete) is logged
   * with the record it replaces, and undone with that move if their commit
   * fails: the call throws, and no lease it made may stay behind.
   */
  noteLazyMove(slot: number, word: number, status: SlotStatus): void {
    const ticket = this.note(this.#m.slots.get(slot, JOB_NUM), COMMIT_MOVED, LAZY);
    if (!this.#undo.holdsMoves) return;
    // A lease (from READY) counted against its type's rate limit at the call's time; an extend, against none.
    this.#logMove(slot, word, status, recordCopy(this.#m.slots, slot), null, ticket, statusOf(word) === RUNNING ? undefined : this.#m.header[LAST_NOW]!);
  }

  /**
   * Notes a durable move of the call's own, about to be made from `word` to
   * `status` with the mover's draft; after the catch-up, with a journal, it
   * is frozen until its commit and logged with the record it replaces (see
   * UndoLog). Called just before the move: under the lock nothing else moves
   * the slot, so it goes to the word `nextWord(word, status)`.
   *
   * A move of the catch-up (an expiry) is noted LAZY: no call waits for its
   * commit, as a crash before it brings the job back RUNNING, which the
   * reopen turns into a failed attempt all the same. A call that waited for
   * it could fail on its commit after making moves of its own it cannot
   * undo (a poll's lease).
   */
  noteOwnMove(slot: number, word: number, status: SlotStatus, content = false): void {
    const { slots, awaited } = this.#m;
    // A change of content (an edit's priority or payload): noted as new, so the commit writes the job whole
    // (an update writes only what a state change alters, LoggedMove).
    const ticket = this.note(slots.get(slot, JOB_NUM), content ? COMMIT_SUBMITTED : COMMIT_MOVED, !this.#undo.recording);
    if (!this.#undo.recording) return;
    awaited[slot] = markOf(ticket);
    const record = recordCopy(slots, slot);
    // Only an arena chain needs its text saved (the move may free it); a canned error is its ref.
    const lastError = record[ERROR_REF]! > 0 ? this.#records.errorText(record) : null;
    this.#logMove(slot, word, status, record, lastError, ticket);
    // An edit frees the old data chain once it is made: its text, to be stored again by an undo.
    if (content) this.#undo.lastMove()!.data = this.#records.dataBytes(record);
  }

  /** Logs a move of `slot` from `word` to `status`, about to be made under the lock, with what puts it back (see UndoneMove). */
  #logMove(slot: number, word: number, status: SlotStatus, record: Float64Array, lastError: string | null, ticket: number, leasedAt?: number): void {
    this.#undo.add({ slot, status: statusOf(word), to: nextWord(word, status), record, lastError, ticket, leasedAt });
  }

  /**
   * After a submit's move, with a journal: the new job in `slot` (its word
   * `word`, its note `ticket`) is frozen until its commit, and logged with
   * no record: undone, its slot is freed (see UndoLog).
   */
  noteOwnSubmit(slot: number, word: number, ticket: number): void {
    if (!this.#undo.recording) return;
    this.#m.awaited[slot] = markOf(ticket);
    this.#undo.add({ slot, status: FREE, to: word, record: null, lastError: null, ticket });
  }

  /**
   * As the finished job in `slot` is evicted (holding `chunks` arena chunks,
   * noted as `ticket`), with a journal: an eviction that makes room for the
   * call's own move is logged with the job whole, to be put back if the
   * commit fails.
   */
  noteOwnEviction(slot: number, chunks: number, ticket: number): void {
    if (this.#undo.recording) this.#undo.addEviction({ job: this.#records.loggedJob(slot), chunks, ticket });
  }

  /**
   * Notes a job an undo moved back (`kind`: COMMIT_MOVED, or COMMIT_SUBMITTED
   * for one put back after its eviction): the next commit writes it as the
   * undo left it, over whatever a leader presumed dead may still write of the
   * move. But for a commit ring full of notes that cannot commit (a disk that
   * keeps failing): there a note would need a commit under the lock, which
   * would fail and stop the undo halfway; while the note of the move undone,
   * `ticket`, is still pending, that note serves instead.
   */
  noteUndone(jobNum: number, ticket: number, kind: CommitKind): void {
    const commits = this.#m.commits;
    if (this.#log === undefined || (commits.room() < 1 && commits.isPending(ticket))) return;
    this.note(jobNum, kind, LAZY);
  }

  /** Whether the job in `slot` is frozen by a commit in flight (I21). */
  frozen(slot: number): boolean {
    return this.#log !== undefined && this.#m.commits.awaits(this.#m.awaited[slot]!);
  }

  /** AWAITS_COMMIT, for the job in `slot` frozen by its commit in flight: `awaitedTicket()` is then the commit to wait for. */
  awaitCommitOf(slot: number): number {
    this.#awaitedTicket = ticketOfMark(this.#m.awaited[slot]!);
    return AWAITS_COMMIT;
  }

  /** The commit the last AWAITS_COMMIT waits for. */
  awaitedTicket(): number {
    return this.#awaitedTicket;
  }

  /** For a poll: whether the job in `slot` is frozen; if so `awaitedTicket()` is the commit the poll waits for before it looks again. Keeps I21. */
  awaitsCommit(slot: number): boolean {
    if (!this.frozen(slot)) return false;
    this.awaitCommitOf(slot);
    return true;
  }

  /** Takes the current call's own durable moves and evictions out (see UndoLog), for Maintenance#rollBack if their commit fails. */
  takeUndo(): Undo {
    return this.#undo.take();
  }

  /** The last commit ticket the current call took, if it changed anything the journal must learn. */
  noted(): number | undefined {
    return this.#ticket;
  }

  /**
   * Whether the current call changed what a crash would bring back, so must
   * not return before the commit: everything but a lease, an extended lease,
   * an expiry and an eviction. Those are LAZY: lost in a crash they change
   * nothing that matters, as a job RUNNING at a crash runs again anyway (its
   * attempt failed, as an expiry would have failed it) and an evicted job was
   * finished.
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
  note(jobNum: number, kind: CommitKind, lazy = false): number {
    if (this.#log === undefined) return 0;
    const commits = this.#m.commits;
    if (commits.room() < 1) this.#commitNotes();
    const ticket = (this.#ticket = commits.note(jobNum, kind));
    if (!lazy) this.#mustCommit = true;
    return ticket;
  }

  /** Before a batch of `jobs` submits, with a journal: room in the commit ring for every note the batch may take. */
  roomForBatch(jobs: number): void {
    // Every note of a batch (its jobs, and the evictions that make their room) must fit the commit ring
    // without a commit in between, so that the batch reaches the journal in one transaction.
    if (this.#log !== undefined && this.#m.commits.room() < this.#m.slots.capacity + jobs) this.#commitNotes();
  }

  /**
   * The journal writes every noted change needs, each job once, as it is
   * now (under the lock, so every job is read between moves); and the ticket
   * they cover. A job gone from memory (evicted, or a submit undone) has its
   * row deleted, if it was ever written; one noted new (submitted, or put
   * back by an undo after its eviction) is inserted whole; any other, updated.
   */
  pendingWrites(): { writes: JournalWrites; upTo: number } {
    const flagsOf = new Map<number, number>();
    const upTo = this.#m.commits.forEachPending((jobNum, kind) => {
      flagsOf.set(jobNum, (flagsOf.get(jobNum) ?? 0) | FLAG_OF_KIND[kind]);
    });
    const writes: JournalWrites = { inserts: [], updates: [], evictions: [] };
    for (const [jobNum, flags] of flagsOf) {
      const slot = this.#jobs.find(jobNum);
      if (slot < 0) writes.evictions.push(jobNum);
      else if ((flags & NEW) === 0) writes.updates.push(this.#records.loggedMove(slot));
      else writes.inserts.push(this.#records.loggedJob(slot));
    }
    return { writes, upTo };
  }

  /** Commits every noted change now, under the lock. */
  #commitNotes(): void {
    const { writes, upTo } = this.pendingWrites();
    this.#log!.write(writes);
    this.#m.commits.publish(upTo);
  }
}

/** Whether the journal must insert a job whole (NEW) rather than update it, by the kinds of its notes; whether it deletes it, memory tells. */
const NEW = 1;
const FLAG_OF_KIND: Record<CommitKind, number> = { [COMMIT_SUBMITTED]: NEW, [COMMIT_MOVED]: 0, [COMMIT_EVICTED]: 0 };
