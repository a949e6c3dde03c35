import { JobStatus, type Payload } from '../../types.js';
import {
  ATTEMPTS, ATTEMPT_LIMIT, CANCELLED, DATA_REF, DEAD, DELAYED, ERROR_BYTES, ERROR_NONE, ERROR_REF, FINISHED_AT, FREE, GROUP, HEADERS_BYTES,
  HEADERS_REF, JOB_NUM, KEY_BYTES, KEY_REF, KEY_TTL, LEASE_LENGTH, LEASE_UNTIL, MOVES, PAYLOAD_BYTES, PRIORITY, READY, RESULT_BYTES, RESULT_REF, RUNNING,
  PARENT, PROGRESS, PROGRESS_TOKEN, RUN_AT, WAITING, STARTED_AT, SUBMITTED_AT, SUCCEEDED, TOKEN, TYPE, WORKER, ALL_FIELDS, fieldBit, type SlotStatus,
} from '../memory/layout.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { LoggedJob } from '../journal/movelog.js';
import type { JobMoves } from './job-moves.js';
import { payloadByteLength, payloadField, storeData } from '../records.js';

/** What `newDraft` takes for a job whose data chain it stores itself (not a reservation's run, I30). */
export const NOT_STORED = 0;

/**
 * The move *place* (lock holder): FREE → READY or DELAYED, a new job from
 * its draft (submit), or a journaled job put back as the journal holds it
 * (a restore, an undone eviction). The draft is built field by field
 * (`newDraft`, `setField`, `storeKey`, `storeHeaders`), then `place` makes
 * the move from the free word read as the draft began, and files the job.
 */
export class Placement {
  readonly #moves: JobMoves;
  /** The fields the new job's draft sets so far (see `newDraft`): what a never-used slot takes of it. */
  #newFields = 0;
  /** The new job's slot's free word, read as its draft began (see `newDraft`): the word `place` moves from. */
  #freeWord = 0;

  constructor(moves: JobMoves) {
    this.#moves = moves;
  }

  /** A journaled job back in a free slot, as the journal holds it. */
  restoreJob(job: LoggedJob, now: number): void {
    const { typeNames, workerNames } = this.#moves.memory;
    const errorRef = job.lastError === null ? ERROR_NONE : this.#moves.room.storeError(job.lastError);
    const slot = this.#moves.room.takeSlot();
    const typeBytes = Buffer.byteLength(job.type);
    this.newDraft(slot, job.num, job.type, typeNames.numberOf(job.type), typeBytes, job.payload, payloadByteLength(job.payload), job.priority, job.runAt);
    this.setField(ATTEMPTS, job.attempts);
    this.setField(TOKEN, job.token);
    // One field, by status: the lease's end while RUNNING, the finish order once finished.
    this.setField(LEASE_UNTIL, job.status === JobStatus.SUCCEEDED || job.status === JobStatus.CANCELLED ? job.finishSeq : job.leaseUntil);
    // A DEAD job journaled without when it died (DIED_AT) died, for the retain option's DEAD limits, at this reopen.
    if (job.status === JobStatus.DEAD && job.leaseUntil === 0) this.setField(LEASE_UNTIL, now);
    this.setField(ERROR_REF, errorRef);
    this.setField(ERROR_BYTES, errorRef > 0 ? Buffer.byteLength(job.lastError!) : 0);
    this.setField(WORKER, job.workerId === null ? 0 : workerNames.numberOf(job.workerId));
    this.setField(MOVES, this.#moves.journaled ? job.moves : 0);
    this.setField(ATTEMPT_LIMIT, job.maxAttempts);
    if (job.result !== null) {
      const arena = this.#moves.memory.arena;
      const bytes = typeof job.result === 'string' ? Buffer.byteLength(job.result) : job.result.length;
      this.setField(RESULT_REF, typeof job.result === 'string' ? arena.storeCounted(bytes, job.result) : arena.storeCountedBytes(job.result));
      this.setField(RESULT_BYTES, bytes);
    }
    this.setField(LEASE_LENGTH, job.timeout);
    if (job.key !== null) this.storeKey(job.key, Buffer.byteLength(job.key), job.keyTtl);
    // The times: null in the journal is unknown (NaN), where the job has one (see Records#read).
    const finished = job.status === JobStatus.SUCCEEDED || job.status === JobStatus.DEAD || job.status === JobStatus.CANCELLED;
    this.setField(FINISHED_AT, job.finishedAt ?? (finished ? NaN : 0));
    this.setField(STARTED_AT, job.startedAt ?? (job.token > 0 ? NaN : 0));
    this.setField(SUBMITTED_AT, job.submittedAt ?? NaN);
    this.setField(GROUP, job.group === null ? 0 : this.#moves.memory.groupNames.numberOf(job.group));
    if (job.headers !== null) this.storeHeaders(job.headers);
    // A flow's links; a parent that waits is DELAYED, filed nowhere (keeps I28).
    this.setField(PARENT, job.parent);
    this.setField(WAITING, job.waiting);
    // The latest lease's progress: it reported under the job's token.
    if (job.progress !== null) {
      this.setField(PROGRESS, job.progress);
      this.setField(PROGRESS_TOKEN, job.token);
    }
    const status = STATUS_OF_NAME[job.status];
    this.place(slot, job.num, status === READY && (job.runAt > now || job.waiting > 0) ? DELAYED : status);
  }

  /**
   * The draft of a new job for the free `slot`: its strings stored (the type
   * in the data chain only if the type table has no room for it,
   * `typeNumber` 0), no attempt, lease, error or worker yet. Further fields
   * are set with `setField`, and `place` places it. `dataRef`: a data chain
   * stored already (a reservation's run the submit adopts), or NOT_STORED.
   */
  newDraft(
    slot: number, num: number, type: string, typeNumber: number, typeBytes: number, payload: Payload, payloadBytes: number, priority: number, runAt: number,
    dataRef = NOT_STORED,
  ): void {
    const arena = this.#moves.memory.arena;
    // Read before the look at the lock, and the word `place` moves from: a rebuild after a takeover gives every
    // free slot a new word, so a holder taken for dead from here on cannot place its job over the taker's (relies on I3),
    // nor a reservation's run the taker's rebuild reclaimed after the submit found it held (keeps I30).
    this.#freeWord = this.#moves.memory.slots.word(slot);
    assertHeld(this.#moves.memory.lock);
    let ref = dataRef;
    if (ref === NOT_STORED) ref = typeNumber > 0 ? storeData(arena, payloadBytes, '', payload) : storeData(arena, typeBytes + payloadBytes, type, payload);
    const draft = this.#moves.mover.draft;
    // Every other field is zero: no attempt, token, lease, error (ERROR_NONE), worker, moves, own limit, result,
    // key, lease length or headers. A slot used before takes the whole record, so its draft starts at zero; a
    // never-used one is all zero already, and takes only the fields set (see `place`).
    if (this.#moves.memory.slots.jobNums[slot] !== 0) draft.fill(0);
    draft[JOB_NUM] = num;
    draft[PRIORITY] = priority;
    draft[RUN_AT] = runAt;
    draft[DATA_REF] = ref;
    draft[TYPE] = typeNumber > 0 ? typeNumber : -typeBytes;
    draft[PAYLOAD_BYTES] = payloadField(payload, payloadBytes);
    this.#newFields = NEW_JOB_FIELDS;
  }

  /** Sets one more field of the new job's draft (see `newDraft`). */
  setField(field: number, value: number): void {
    this.#moves.mover.draft[field] = value;
    if (value !== 0) this.#newFields |= fieldBit(field);
  }

  /** Stores the new job's idempotent key: its chain (the room was made) and its TTL. */
  storeKey(key: string, keyBytes: number, keyTtl: number): void {
    assertHeld(this.#moves.memory.lock);
    this.setField(KEY_REF, this.#moves.memory.arena.storeCounted(keyBytes, key));
    this.setField(KEY_BYTES, keyBytes);
    this.setField(KEY_TTL, keyTtl);
  }

  /** Stores the new job's headers (JSON text) in the arena, its room made, and points the draft at them. */
  storeHeaders(headers: string): void {
    const bytes = Buffer.byteLength(headers);
    assertHeld(this.#moves.memory.lock);
    this.setField(HEADERS_REF, this.#moves.memory.arena.storeCounted(bytes, headers));
    this.setField(HEADERS_BYTES, bytes);
  }

  /** Places the draft, a new job numbered `num`, in the free `slot` in `status`, filed in the index its status needs; its word. */
  place(slot: number, num: number, status: SlotStatus): number {
    const { slots, jobMap } = this.#moves.memory;
    const mover = this.#moves.mover;
    // A slot never used (JOB_NUM 0: job numbers start at 1) is all zero: it takes only the fields the new job
    // sets, and the columns a job leaves at zero are not even read. One used before takes the whole record.
    const fields = slots.jobNums[slot] === 0 ? this.#newFields : ALL_FIELDS;
    const next = mover.apply(slot, this.#freeWord, status, FREE, fields);
    if (next < 0) throw new LockLost();
    jobMap.set(num, slot);
    this.#moves.fileDecided(slot, next, status);
    return next;
  }
}

/** The fields `newDraft` sets: the least a new job's record holds. */
const NEW_JOB_FIELDS = fieldBit(JOB_NUM) | fieldBit(PRIORITY) | fieldBit(RUN_AT) | fieldBit(DATA_REF) | fieldBit(TYPE) | fieldBit(PAYLOAD_BYTES);

const STATUS_OF_NAME: Record<JobStatus, SlotStatus> = {
  PENDING: READY, RUNNING, SUCCEEDED, DEAD, CANCELLED,
};
