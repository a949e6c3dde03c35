import * as step from '../memory/steps.js';
import { InvalidArgumentError, Refusal } from '../../errors.js';
import type { TimeSource } from '../../clock.js';
import type { RetryPolicy } from '../../policy.js';
import { Arena } from '../tables/arena.js';
import {
  ATTEMPT_LIMIT, COMMIT_SUBMITTED, JOB_NUM, DATA_REF, DEAD, DELAYED, ERROR_FAILED, FINISH_BASE, FINISH_TICKET, FREE, GROUP, GROUP_NAMES, JOB_SEQ, LAST_NOW, LEASE_LENGTH, MAINTENANCE_ROW,
  MOVES, PARENT, PAYLOAD_BYTES, payloadLength, READY, WAITING, WAITING_PARENTS, RUNNING, SUBMITTED_AT, TOKEN_RESERVED, TOKEN_SEQ, isBusy, SLOT_HIGH_WATER, statusOf, SUCCEEDED,
} from '../memory/layout.js';
import type { QueueMemory } from '../queue-memory.js';
import { Mover } from '../protocol/mover.js';
import type { LoggedJob, MoveLog, Sequences } from '../journal/movelog.js';
import { keyHash } from '../../key-hash.js';
import { Records, countedChainBytes, countedChunks, dataBytes, leadingTypeBytes, payloadField, storeData } from '../records.js';
import type { CheckedJob } from '../../validate/job-input.js';
import type { CheckedPayload } from '../../validate/pending-edits.js';
import type { Undo } from '../journal/undo-log.js';
import type { LockHolder } from '../moves/worker-path.js';
import { Retention } from './retention.js';
import type { RetainOptions } from '../../options.js';
import { assertHeld } from '../protocol/lock-held.js';
import { Filing } from './filing.js';
import { JournalNotes } from '../journal/journal-notes.js';
import { HeldJobs } from './held-jobs.js';
import { NONE_FROZEN, Room } from './room.js';
import { JobMoves } from '../moves/job-moves.js';
import { NOT_STORED, Placement } from '../moves/place.js';
import { failNow } from '../moves/fail.js';
import { releaseLease } from '../moves/release.js';
import { editPending, type PendingEdit } from '../moves/edit.js';
import { cancelJob } from '../moves/cancel.js';
import { CANCELLED_RUNNING } from '../protocol/cancels.js';
import { retryDeadJob } from '../moves/retry-dead.js';
import { restoreEvicted, undoMoves } from '../moves/undo.js';
import { Rebuilder } from './rebuild.js';
import { CatchUp } from './catch-up.js';
import { LockedReads } from './locked-reads.js';
import { NOT_MAPPED } from '../tables/jobmap.js';
import { ReservedBytes } from './reserved-bytes.js';


/**
 * The maintenance side of the queue: every operation that runs under the
 * maintenance lock (the caller takes it). Submits, fail, release, cancel,
 * retryDead; at the start of each locked call (`prepare`) expiry of due
 * leases and promotion of due delayed jobs; eviction; rebuilds; and at the
 * end (`filing.publishDue`) the time the next maintenance is due, for the
 * lock-free worker path to compare with.
 *
 * Methods return a slot, a value, or a negative `Refusal`; they never throw
 * for a refused operation, and a refused operation has changed nothing.
 * Data flows one way: the slot's lease word decides (a CAS commits each
 * move: I1, I2), then the hints follow (rings, heaps, map, counters).
 *
 * This class keeps the operations of a job and the start of each locked
 * call; the rest is split by concern among its parts, each in a module of
 * its own, and the queue calls a part directly when the work is that part's
 * alone (no forwarders): `catchUp` (waits and settling), `filing` (draining
 * the rings, NEXT_DUE), `notes` (what the journal learns, undo), `room`
 * (results, chains), `reads` (counts, dead letters, the listing),
 * `rebuilder`, `held` (rate limits).
 */
export class Maintenance implements LockHolder {
  readonly #m: QueueMemory;
  readonly #log: MoveLog | undefined;
  /** The `retain` option's limits on finished jobs. */
  readonly #retention: Retention;
  #mover: Mover;
  readonly records: Records;
  // Its parts: each is handed what it needs, below.
  /** Where jobs are filed by status, and NEXT_DUE published from. */
  readonly filing: Filing;
  /** What the journal learns of each call, and the moves it must undo if the commit fails. */
  readonly notes: JournalNotes;
  /** The jobs a rate limit holds back until their type's window opens. */
  readonly held: HeldJobs;
  /** Free slots and arena chunks, and the evictions that make them. */
  readonly room: Room;
  /** What every locked move of a job shares (see moves/job-moves.ts). */
  readonly #moves: JobMoves;
  /** How a new or journaled job is placed in a free slot. */
  readonly #placement: Placement;
  /** Every hint derived again from the slots. */
  readonly rebuilder: Rebuilder;
  /** How the queue is brought up to now: expiries, promotions, held jobs let go, lock-free calls waited out. */
  readonly catchUp: CatchUp;
  /** What the read calls read under the lock: counts, the dead letters, the listing. */
  readonly reads: LockedReads;
  /** This instance's payloads written in place (`reserveBytes`), and their runs' keeping (I30). */
  readonly reserved: ReservedBytes;

  constructor(memory: QueueMemory, policy: RetryPolicy, time: TimeSource, retain: RetainOptions, log?: MoveLog) {
    this.#m = memory;
    this.#retention = new Retention(retain);
    this.#log = log;
    this.#mover = new Mover(memory, MAINTENANCE_ROW);
    this.records = new Records(memory, policy.maxAttempts);
    // `this` is each part's MoverHolder (the mover changes as the instance takes a row) and JournalNotes' JobFinder; Room
    // settles through the catch-up, made after it (the catch-up's moves make room).
    this.filing = new Filing(memory, this.#retention, this);
    this.notes = new JournalNotes(memory, this.records, this, log);
    this.held = new HeldJobs(memory, this.filing);
    this.room = new Room(memory, this.#retention, this.filing, this.notes, this, { settle: (now) => this.catchUp.settle(now) });
    this.#moves = new JobMoves(memory, policy, time, log !== undefined, this.filing, this.notes, this.room, this);
    this.#placement = new Placement(this.#moves);
    this.reserved = new ReservedBytes(memory, this.room, this);
    this.rebuilder = new Rebuilder(memory, this.filing, this, this.#moves, this.reserved);
    this.catchUp = new CatchUp(memory, time, log !== undefined, this.filing, this.held, this.#moves, this.rebuilder, this);
    this.reads = new LockedReads(memory, this.filing);
  }

  /** The mover this instance's maintenance moves use: its own row's once it has one (so a stalled holder never shares an intent with the next). */
  get mover(): Mover {
    return this.#mover;
  }

  set mover(mover: Mover) {
    this.#mover = mover;
  }

  /**
   * Starts a locked operation, right after the lock was taken: reads the
   * clock (under the lock, so that the operation's time is no older than any
   * lock-free claim stamped while it waited; a clock that stalls here makes
   * this holder look dead, and it is taken over). Returns the time the
   * operation runs at.
   *
   * A time older than the latest maintenance is a clock that really went
   * back: then pending jobs are re-sorted by a rebuild. With `repair` (the lock was
   * taken over), the hints are rebuilt first. Then the queue is brought up to
   * now: leases with leaseUntil <= now expire, in leaseUntil order, each as a
   * failed attempt at its leaseUntil; delayed jobs whose runAt has come become ready;
   * and, with `retain`, finished jobs beyond the `retain` option's limits are evicted.
   */
  prepare(repair: boolean, readClock: () => number, retain: boolean): number {
    const { header, access, lockWords } = this.#m;
    // This thread's slot views over every slot handed out so far: another holder may have grown the table since.
    this.#m.slots.keepUp(header[SLOT_HIGH_WATER]!);
    let now: number;
    try {
      now = readClock();
    } catch (error) {
      // A clock that throws or reads no time ends the call before it changed anything: the rebuild it was asked for is the next holder's.
      if (repair) this.#m.lock.passOnRepair();
      throw error;
    }
    // Asked for by the lock: a takeover (or a holder that passed its repair on), whose predecessor may be alive.
    const fenceStale = repair;
    if (now < header[LAST_NOW]!) repair = true;
    // Rebased long before the shared ticket could wrap.
    if (access.load(lockWords, FINISH_TICKET) >>> 0 > 2 ** 30) repair = true;
    if (repair) this.rebuilder.rebuild(now, { fenceStale });
    assertHeld(this.#m.lock);
    this.notes.startCall();
    this.#m.setLastNow(now);
    // Before NEXT_DUE, with no earlier lease flagged, no lease or delayed job is due (the lease handshake):
    // the rings and heaps stay as they are, and so does NEXT_DUE.
    if (this.#m.dueBy(now)) this.catchUp.catchUp(now);
    if (retain && (this.#retention.limits || this.#retention.deadLimits)) this.room.retain(now);
    // The catch-up's expiries are not the call's own (any call would have made them): only what follows is undone.
    if (this.#log !== undefined) this.notes.recordOwnMoves();
    return now;
  }

  // ── operations ─────────────────────────────────────────────────────────

  /**
   * A new PENDING job, to run from `runAt`: its number, or a Refusal (then
   * nothing changed). The caller has made sure its key (if any) is free (see
   * `keyHolder`). Allocates nothing on the heap for a job without a key.
   */
  submit(job: CheckedJob, runAt: number, now: number, flow: FlowLink = NO_FLOW): number {
    const { header } = this.#m;
    // Before the job number and the slot are taken: a holder taken for dead (between two jobs of a batch) takes neither (keeps I9).
    assertHeld(this.#m.lock);
    // Before anything changes: a reservation reclaimed refuses the submit. Else its run becomes the job's data
    // chain, not copied (keeps I30); a type not in the type table leads its chain, so then it is copied.
    const adopted = this.reserved.adoption(job.payload);
    if (adopted < 0) return adopted;
    // Before anything changes: a group the table has no room for refuses the submit.
    const group = job.group === null ? 0 : this.groupNumber(job.group);
    const typeNumber = this.#m.typeNames.numberOf(job.type);
    const dataRef = typeNumber > 0 && adopted > 0 ? adopted : NOT_STORED;
    const storedBytes = dataRef === NOT_STORED ? job.payloadBytes : 0;
    const refusal = this.room.makeRoom(this.#chunksFor(typeNumber, job.typeBytes, storedBytes, job.keyBytes, job.headersText), 1);
    if (refusal < 0) return this.#refusalOrAwait(refusal);
    // Looked at again: making room may settle, and a rebuild there frees the runs of owners found gone (keeps I30).
    if (adopted > 0 && this.reserved.adoption(job.payload) !== adopted) return Refusal.ReservationLost;
    // Only once the submit can no longer be refused: the first group makes groups take turns.
    if (group > 0) this.takeTurns(now);
    const num = header[JOB_SEQ]! + 1;
    header[JOB_SEQ] = num;
    const ticket = this.notes.note(num, COMMIT_SUBMITTED);
    const slot = this.room.takeSlot();
    const moves = this.#placement;
    moves.newDraft(slot, num, job.type, typeNumber, job.typeBytes, job.payload, job.payloadBytes, job.priority, runAt, dataRef);
    // A job without attempts of its own takes its type's policy's, if the type has one now (see RetryPolicyTable).
    moves.setField(ATTEMPT_LIMIT, job.maxAttempts || this.#m.retryPolicies.maxAttemptsOf(typeNumber));
    moves.setField(LEASE_LENGTH, job.timeoutMillis);
    moves.setField(SUBMITTED_AT, now);
    moves.setField(GROUP, group);
    // A flow's links (see moves/flows.ts): a parent with children waits, DELAYED and filed nowhere (keeps I28).
    moves.setField(PARENT, flow.parent);
    moves.setField(WAITING, flow.children);
    if (job.key !== null) moves.storeKey(job.key, job.keyBytes, job.keyTtlMillis);
    if (job.headersText !== null) moves.storeHeaders(job.headersText);
    if (this.#log !== undefined) moves.setField(MOVES, 1);
    let word: number;
    try {
      word = moves.place(slot, num, runAt > now || flow.children > 0 ? DELAYED : READY);
    } finally {
      // Placed (the slot holds its number: numbers are never reused, I9), even if filing it threw: the slot
      // references the run now, and the reservation is spent, its entry gone (keeps I30).
      if (adopted > 0 && this.#m.slots.get(slot, JOB_NUM) === num) this.reserved.spend(job.payload as Uint8Array, dataRef !== NOT_STORED);
    }
    if (flow.children > 0) header[WAITING_PARENTS]!++;
    // After the job is placed: a holder killed in between leaves the key to the rebuild, which finds it in the slot.
    if (job.key !== null) this.#m.keyMap.set(job.key, keyHash(job.key), slot);
    this.notes.noteOwnSubmit(slot, word, ticket);
    return num;
  }

  /**
   * The number of the job that holds the idempotent `key` at `now`, or KEY_FREE if
   * the key is free: a job holds its key while PENDING or RUNNING, and once
   * finished (SUCCEEDED, DEAD, CANCELLED) until FINISHED_AT + KEY_TTL; an
   * evicted job holds nothing. AWAITS_COMMIT for a holder frozen by its
   * commit in flight (keeps I21): its submit may yet be
   * undone, so its id must not be handed out before it is durable.
   */
  keyHolder(key: string, now: number, throttleMillis = 0): number {
    const { keyMap, slots } = this.#m;
    const slot = keyMap.find(key, keyHash(key));
    if (slot === NOT_MAPPED) return KEY_FREE;
    const status = statusOf(this.catchUp.settledWord(slot, now));
    if (status === FREE) return KEY_FREE;
    if (this.notes.frozen(slot)) return this.notes.awaitCommitOf(slot);
    // A throttled submit: the window runs from the holder's submit, whatever its status (a holder of unknown submit time, NaN, holds nothing).
    if (throttleMillis > 0) return now < slots.submittedAts[slot]! + throttleMillis ? slots.jobNums[slot]! : KEY_FREE;
    const live = status === READY || status === DELAYED || status === RUNNING ||
      (slots.keyTtls[slot]! > 0 && now < slots.finishedAts[slot]! + slots.keyTtls[slot]!);
    return live ? slots.jobNums[slot]! : KEY_FREE;
  }

  /**
   * A debounced submit's edit of `key`'s holder: if it is PENDING, its
   * payload replaced and its runAt pushed to `delay` after now, in one edit
   * (see `edit`): its number. KEY_FREE if the key has no PENDING holder (the
   * caller then places a new job, which takes the key), AWAITS_COMMIT for a
   * holder frozen by its commit in flight, or the Refusal of making room for
   * the payload (then nothing changed).
   */
  debounce(key: string, payload: CheckedPayload, delay: number, now: number): number {
    const { keyMap, slots } = this.#m;
    const slot = keyMap.find(key, keyHash(key));
    if (slot === NOT_MAPPED) return KEY_FREE;
    const status = statusOf(this.catchUp.settledWord(slot, now));
    if (status !== READY && status !== DELAYED) return KEY_FREE;
    const done = this.edit(slot, { delay }, payload, now);
    // NotEditable: a lock-free poll leased the holder first, which is then RUNNING: the key is the new job's.
    if (done === Refusal.NotEditable) return KEY_FREE;
    return done === 0 ? slots.jobNums[slot]! : done;
  }

  /**
   * Arena chunks a new job of `type` takes: those of its payload, of its key
   * (0 bytes: none), of its headers (null: none), and of its type too if the type table has no room for
   * it. Interns the type (a type the table holds is no change a user can see).
   */
  chunksForJob(type: string, typeBytes: number, payloadBytes: number, keyBytes: number, headers: string | null): number {
    return this.#chunksFor(this.#m.typeNames.numberOf(type), typeBytes, payloadBytes, keyBytes, headers);
  }

  /**
   * Chunks a job of a batch takes, or Refusal.ReservationLost for a
   * reservation reclaimed (then nothing of the batch is placed). A pending
   * reservation's run is taken already: none for its payload, the first time
   * the batch names it (`adopted` collects those; a second job with the same
   * view is a copy of it).
   */
  batchJobChunks(job: CheckedJob, adopted: Set<Uint8Array>): number {
    const run = this.reserved.adoption(job.payload);
    if (run < 0) return run;
    const typeNumber = this.#m.typeNames.numberOf(job.type);
    let payloadBytes = job.payloadBytes;
    if (typeNumber > 0 && run > 0 && !adopted.has(job.payload as Uint8Array)) {
      adopted.add(job.payload as Uint8Array);
      payloadBytes = 0;
    }
    return this.#chunksFor(typeNumber, job.typeBytes, payloadBytes, job.keyBytes, job.headersText);
  }

  #chunksFor(typeNumber: number, typeBytes: number, payloadBytes: number, keyBytes: number, headers: string | null): number {
    const keyChunks = keyBytes > 0 ? Arena.chunksFor(countedChainBytes(keyBytes)) : 0;
    return Arena.chunksFor(dataBytes(typeNumber, typeBytes, payloadBytes)) + keyChunks + countedChunks(headers);
  }

  /**
   * Room for `jobs` (as many slots, and chunks for their strings), evicting
   * finished jobs only if that makes enough: 0, or the Refusal that nothing
   * was evicted for.
   */
  roomFor(jobs: number, chunks: number): number {
    this.notes.roomForBatch(jobs);
    return this.#refusalOrAwait(this.room.makeRoom(chunks, jobs));
  }

  /** A refusal for room stands, unless a finished job frozen by its commit in flight makes the room once durable: AWAITS_COMMIT (see Room#frozenSlot). */
  #refusalOrAwait(refusal: number): number {
    const frozen = this.room.frozenSlot;
    return refusal < 0 && frozen !== NONE_FROZEN ? this.notes.awaitCommitOf(frozen) : refusal;
  }

  /**
   * Puts journaled jobs back into an empty queue (a RUNNING one must come
   * already turned to PENDING or DEAD), continues the sequences, and derives
   * every hint. The caller has made sure they fit.
   */
  restore(jobs: readonly LoggedJob[], sequences: Sequences, now: number): void {
    const { header, lockWords } = this.#m;
    let finishSeq = 0;
    for (const job of jobs) {
      this.#placement.restoreJob(job, now);
      finishSeq = Math.max(finishSeq, job.finishSeq);
    }
    header[FINISH_BASE] = finishSeq - (step.load(lockWords, FINISH_TICKET) >>> 0);
    header[JOB_SEQ] = sequences.jobSeq;
    header[TOKEN_SEQ] = sequences.tokenSeq;
    header[TOKEN_RESERVED] = sequences.tokenSeq;
    // Groups take turns again if a job kept has one: the rebuild files the ready jobs by turn.
    if (!this.#m.turns.taken && jobs.some((job) => job.group !== null)) this.#m.turns.start();
    // A flow kept: every complete takes the lock again, where children count down their parents (keeps I28).
    if (jobs.some((job) => job.parent !== 0)) this.#m.startFlows();
    // The journal keeps no turns: the ready jobs take them afresh, in (priority, runAt, submission) order.
    this.rebuilder.rebuild(now, { keepTurns: false });
  }

  /** Reserves `count` tokens for a row's block; returns the first. With a journal, reserved there first, so none repeats after a crash (keeps I8). */
  reserveTokens(count: number): number {
    const { header } = this.#m;
    const first = header[TOKEN_SEQ]! + 1;
    const last = first + count - 1;
    if (this.#log !== undefined && last > header[TOKEN_RESERVED]!) {
      // In the journal first: a journal that refuses the reservation leaves the sequences as they were.
      this.#log.reserve({ jobSeq: header[JOB_SEQ]!, tokenSeq: last + JOURNAL_TOKEN_BLOCK });
      header[TOKEN_RESERVED] = last + JOURNAL_TOKEN_BLOCK;
    }
    header[TOKEN_SEQ] = last;
    return first;
  }

  /** The slot of job number `n`, or a Refusal. Under the lock the map is exact (rebuilt after any crash). */
  find(n: number): number {
    const { header, jobMap, slots } = this.#m;
    if (n > header[JOB_SEQ]!) return Refusal.NotFound;
    const slot = jobMap.get(n);
    // A BUSY word is a job mid-move (never a free slot: only the holder places jobs).
    const word = slot !== NOT_MAPPED ? slots.word(slot) : 0;
    return slot !== NOT_MAPPED && slots.jobNums[slot] === n && (isBusy(word) || statusOf(word) !== FREE) ? slot : Refusal.Evicted;
  }

  /** 0 if `token` is the slot's current, valid lease (leases due are expired by `prepare`), else StaleLease. */
  #checkLease(word: number, slot: number, token: number): number {
    return statusOf(word) === RUNNING && this.#m.slots.tokens[slot] === token ? 0 : Refusal.StaleLease;
  }

  /** 0 if `token` is the current, valid lease of the job in `slot` (once no move of it is in flight), else StaleLease. */
  checkLease(slot: number, token: number, now: number): number {
    return this.#checkLease(this.catchUp.settledWord(slot, now), slot, token);
  }

  /** A failed attempt now; `permanent` dead-letters the job whatever attempts are left. */
  fail(slot: number, token: number, error: string | null, permanent: boolean, now: number): number {
    for (;;) {
      const word = this.catchUp.settledWord(slot, now);
      const refused = this.#checkLease(word, slot, token);
      if (refused < 0) return refused;
      const ref = error === null ? ERROR_FAILED : this.room.storeError(error);
      if (failNow(this.#moves, slot, word, ref, ref > 0 ? Buffer.byteLength(error!) : 0, now, permanent)) return 0;
      this.room.freeCounted(ref);
    }
  }

  /**
   * Hands a lease back unfinished (its worker is shutting down, or snoozes
   * the job): PENDING, ready `delay` after `now` (0: at once), the attempt
   * not counted, lastError kept. The token is refused from then on, as after
   * any move off RUNNING.
   */
  release(slot: number, token: number, now: number, delay = 0): number {
    for (;;) {
      const word = this.catchUp.settledWord(slot, now);
      const refused = this.#checkLease(word, slot, token);
      if (refused < 0) return refused;
      if (releaseLease(this.#moves, slot, word, now, delay)) return 0;
    }
  }

  /**
   * Changes a PENDING job in place (see moves/edit.ts): its priority, its
   * runAt (`delay` after now), its payload (`payload`, stored here: room made
   * for it as for a submit). Refused with NotEditable, changing nothing, on
   * any other status; a new payload's chain is freed if the edit is refused,
   * the old one once the edit is made.
   */
  edit(slot: number, edit: PendingEdit, payload: CheckedPayload | undefined, now: number): number {
    for (;;) {
      const word = this.catchUp.settledWord(slot, now);
      const status = statusOf(word);
      if (status !== READY && status !== DELAYED) return Refusal.NotEditable;
      if (this.notes.frozen(slot)) return this.notes.awaitCommitOf(slot);
      const { slots, arena } = this.#m;
      const type = slots.types[slot]!;
      const oldRef = slots.get(slot, DATA_REF);
      const oldBytes = leadingTypeBytes(type) + payloadLength(slots.get(slot, PAYLOAD_BYTES));
      // A type the type table has no room for leads the chain: the new chain keeps it.
      const newBytes = payload === undefined ? 0 : leadingTypeBytes(type) + payload.bytes;
      if (payload !== undefined) {
        const refusal = this.room.makeRoom(Arena.chunksFor(newBytes), 0);
        if (refusal < 0) return this.#refusalOrAwait(refusal);
        // Making room may have waited out lock-free calls: a claim of the job since is found by the CAS below.
        assertHeld(this.#m.lock);
        const ref = storeData(arena, newBytes, type < 0 ? arena.read(oldRef, 0, -type) : '', payload.value);
        edit.data = { ref, payloadField: payloadField(payload.value, payload.bytes) };
      }
      // A READY job left READY is filed again under its new word: polls must not miss it meanwhile (I26).
      const staysReady = status === READY && !(edit.delay !== undefined && edit.delay > 0);
      const move = (): boolean => editPending(this.#moves, slot, word, status, edit, now);
      if (staysReady ? this.catchUp.refileReady(now, move) : move()) {
        // The edit moved from a READY or DELAYED word: no lease of the job is live (keeps I29).
        if (edit.data !== undefined) arena.free(oldRef, oldBytes);
        return 0;
      }
      if (edit.data !== undefined) arena.free(edit.data.ref, newBytes);
    }
  }

  /**
   * Cancels a PENDING or RUNNING job: 0, or CANCELLED_RUNNING when it ended
   * a lease (the caller then tells the worker loops, see
   * protocol/cancels.ts). A lease run out by `now` was expired first
   * (QueueContext#withJob, keeps I18): its job is cancelled as PENDING.
   */
  cancel(slot: number, now: number): number {
    for (;;) {
      const word = this.catchUp.settledWord(slot, now);
      const status = statusOf(word);
      if (status !== READY && status !== DELAYED && status !== RUNNING) return Refusal.NotPending;
      if (this.notes.frozen(slot)) return this.notes.awaitCommitOf(slot);
      if (cancelJob(this.#moves, slot, word, status, now)) return status === RUNNING ? CANCELLED_RUNNING : 0;
    }
  }

  /**
   * For a worker call refused on `slot` (`refusal`): AWAITS_COMMIT if the job
   * is frozen by another call's commit in flight (a cancel that ended its
   * lease; keeps I21: should that commit fail, the undo gives the lease back
   * and the call, made again, is not refused), else the refusal.
   */
  refusalOnceDurable(slot: number, refusal: number): number {
    return this.notes.frozen(slot) ? this.notes.awaitCommitOf(slot) : refusal;
  }

  retryDead(slot: number, now: number): number {
    let counted = false;
    for (;;) {
      const word = this.catchUp.settledWord(slot, now);
      if (statusOf(word) !== DEAD) return Refusal.NotDead;
      if (this.notes.frozen(slot)) return this.notes.awaitCommitOf(slot);
      const frozenChild = this.#moves.flows.frozenChild(slot);
      if (frozenChild >= 0) return this.notes.awaitCommitOf(frozenChild);
      // A child whose parent still waits (it counted the child's death) is waited for again, before the child
      // can run: a holder that dies in between leaves the parent waiting one child too many, never one too few (keeps I28).
      if (!counted) this.#moves.flows.childRetried(slot);
      counted = true;
      // A flow's parent waits again for its children not ended (a DEAD one under 'fail' among them, marked AWAITED).
      if (retryDeadJob(this.#moves, slot, word, now, this.#moves.flows.awaitChildren(slot))) return 0;
    }
  }

  /**
   * Removes a job that is not RUNNING (see moves/remove.ts): 0, or
   * Refusal.Running (nothing changed); a job frozen by its commit in flight
   * is removed once that commit is durable (keeps I21).
   */
  remove(slot: number, now: number): number {
    for (;;) {
      const word = this.catchUp.settledWord(slot, now);
      if (statusOf(word) === RUNNING) return Refusal.Running;
      if (this.notes.frozen(slot)) return this.notes.awaitCommitOf(slot);
      const waited = this.#moves.flows.waits(slot, word);
      if (this.room.remove(slot, word)) {
        if (waited) this.#moves.flows.leftWaiting();
        // A PENDING child removed has ended, for its parent, as a cancelled one (keeps I28).
        if (statusOf(word) === READY || statusOf(word) === DELAYED) this.#moves.flows.childEnded(slot, FREE, now);
        return 0;
      }
    }
  }

  // ── flows (see moves/flows.ts) ─────────────────────────────────────────

  /** After a complete under the lock of the job in `slot`: its parent, if it waits, counts it (keeps I28). */
  completed(slot: number, now: number): void {
    this.#moves.flows.childEnded(slot, SUCCEEDED, now);
  }

  /** The children of job `parentNum` still in memory, by slot, in submission order. */
  childrenOf(parentNum: number): number[] {
    return this.#moves.flows.childrenOf(parentNum);
  }

  // ── rate limits (see held-jobs.ts) ─────────────────────────────────────

  /** For a claim under the lock: whether the job's type's limit admits it at `now`; if not, it is held until its window opens. */
  admits(slot: number, word: number, now: number): boolean {
    return this.held.admits(slot, word, now);
  }

  leased(slot: number): void {
    this.held.leased(slot);
  }

  mayClaim(): boolean {
    return this.held.mayClaim();
  }

  // ── groups (see group-turns.ts) ────────────────────────────────────────

  /**
   * The number of `group` in the group table, added if new (an entry is no
   * change a caller sees). InvalidArgumentError if the table has no room for
   * a new one.
   */
  groupNumber(group: string): number {
    const number = this.#m.groupNames.numberOf(group);
    if (number === 0) throw new InvalidArgumentError(`Expected the queue to name at most ${GROUP_NAMES} groups, got a new one, ${JSON.stringify(group)}, past them`);
    return number;
  }

  /**
   * Groups take turns from now on, if they did not yet: every ready job is
   * filed again by turn (a rebuild, O(capacity), once in the queue's life;
   * keeps I27). Called once a call that names a group can no longer be refused.
   */
  takeTurns(now: number): void {
    if (this.#m.turns.taken) return;
    this.#m.turns.start();
    // The entries filed so far carry no turn: every ready job takes one now, in (priority, runAt, submission) order.
    this.rebuilder.rebuild(now, { keepTurns: false });
  }

  // ── concurrency caps (see concurrency.ts) ──────────────────────────────

  /**
   * Sets (max > 0) or removes (max 0) the cap of `entry` (QUEUE_CAP or a
   * type number). Every held job is filed back as ready; the first cap
   * makes every mover count RUNNING, and a rebuild (gate shut, no lock-free
   * call in flight) then derives the counts from the slots: O(capacity),
   * once. A lowered cap stops no running job: new claims wait.
   */
  setConcurrency(entry: number, max: number, now: number): void {
    if (this.held.setCap(entry, max)) this.rebuilder.rebuild(now);
    else this.catchUp.settle(now);
  }

  /**
   * Sets (max > 0) or removes (max 0) a type's limit. Every held job is filed
   * back as ready (the next poll holds again those still limited), and the
   * lock-free polls in flight are waited out: once this returns, every lease
   * is counted.
   */
  setRateLimit(typeNumber: number, max: number, windowMillis: number, now: number): void {
    this.held.setLimit(typeNumber, max, windowMillis);
    this.catchUp.settle(now);
  }

  // ── journal (see journal-notes.ts) ─────────────────────────────────────

  /**
   * Undoes a call's own moves whose commit failed (see undoMoves in moves/undo.ts), then
   * rebuilds every hint from the slots: O(capacity), on a failure only. The
   * jobs the call evicted then go back where they fit (see
   * restoreEvicted), and the hints are rebuilt around them. Also
   * run after a failure under the lock with nothing to undo, for its
   * rebuild (the failure may have cut a call short between its hints).
   */
  rollBack(undo: Undo, now: number): void {
    undoMoves(this.#moves, undo.moves);
    this.rebuilder.rebuild(now);
    // After the rebuild: it has freed the slots and chains of the undone submits, the room the evictions made.
    if (restoreEvicted(this.#moves, this.#placement, undo.evictions, now)) this.rebuilder.rebuild(now);
  }
}

/** A new job's place in a flow: its PARENT column (see moves/flows.ts; 0: none) and its children, which it waits for (0: none). */
export interface FlowLink {
  parent: number;
  children: number;
}

/** A job outside any flow. */
export const NO_FLOW: FlowLink = Object.freeze({ parent: 0, children: 0 });

/** What `keyHolder` answers for a key no job holds (job numbers start at 1). */
export const KEY_FREE = -1;

/** Tokens reserved in the journal at a time. */
const JOURNAL_TOKEN_BLOCK = 4096;
