import { JobStatus, type Lease } from '../types.js';
import {
  ATTEMPTS, CANCELLED, DATA_REF, DEAD, DELAYED, ERROR_BYTES, ERROR_DROPPED, ERROR_EMPTY, ERROR_FAILED, ERROR_LEASE_EXPIRED, ERROR_REF,
  FINISH_SEQ, FREE, JOB_NUM, LEASE_UNTIL, MOVES, PAYLOAD_BYTES, PRIORITY, READY, RECORD_FIELDS, RUNNING, RUN_AT, SUCCEEDED, TOKEN,
  TYPE_BYTES, WORKER, isBusy, statusOf, type SlotStatus,
} from './layout.js';
import type { QueueMemory } from './memory.js';
import type { LoggedJob, LoggedMove } from './movelog.js';

const CANNED_ERRORS = new Map<number, string>([
  [ERROR_LEASE_EXPIRED, 'lease expired'],
  [ERROR_FAILED, 'failed'],
  [ERROR_DROPPED, '(error text dropped: no room left in the arena)'],
  [ERROR_EMPTY, ''],
]);

/** The public name of each slot status (FREE has none: a free slot holds no job). */
export const NAME_OF_STATUS: Record<SlotStatus, JobStatus> = [
  'FREE', JobStatus.PENDING, JobStatus.PENDING, JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED,
] as unknown as Record<SlotStatus, JobStatus>;
export { FREE, READY, DELAYED, RUNNING, SUCCEEDED, DEAD, CANCELLED };

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
 * Reading jobs out of shared memory: the lease a claim made, a whole job for
 * a view, the rows the journal writes. Reads only; a record is consistent
 * when the slot's word is the same (and not BUSY) before and after it.
 */
export class Records {
  readonly #m: QueueMemory;
  readonly #copy = new Float64Array(RECORD_FIELDS);
  #lastType = '';
  #lastTypeBytes: Uint8Array = new Uint8Array(0);

  constructor(memory: QueueMemory) {
    this.#m = memory;
  }

  /** The lease a claim just made, from the record it wrote (its draft): the slot itself may move on at once. */
  lease(record: Float64Array): Lease {
    const type = this.#typeOf(record[DATA_REF]!, record[TYPE_BYTES]!);
    return {
      jobId: `J${record[JOB_NUM]}`,
      token: record[TOKEN]!,
      type,
      payload: this.#text(record[DATA_REF]!, record[TYPE_BYTES]!, record[PAYLOAD_BYTES]!),
      attempt: record[ATTEMPTS]!,
      leaseUntil: record[LEASE_UNTIL]!,
    };
  }

  /**
   * The job in `slot`, read seqlock-style; undefined if the slot stays BUSY
   * (the caller waits for its mover under the lock).
   */
  read(slot: number): JobRecord | undefined {
    const { slots } = this.#m;
    const copy = this.#copy;
    for (let tries = 0; tries < 16; tries++) {
      const word = slots.settledWord(slot);
      if (isBusy(word)) return undefined;
      for (let f = 0, at = slot * RECORD_FIELDS; f < RECORD_FIELDS; f++) copy[f] = slots.records[at + f]!;
      // The same word after the copy: no move wrote the record meanwhile (so its lengths and refs are whole).
      if (slots.word(slot) !== word) continue;
      const content = this.#content(copy);
      const lastError = this.errorText(copy);
      // And after the strings are decoded: an eviction frees their chunks (after its move), and a submit may refill them.
      if (slots.word(slot) !== word) continue;
      return {
        jobNum: copy[JOB_NUM]!,
        ...content,
        priority: copy[PRIORITY]!,
        status: statusOf(word),
        attempts: copy[ATTEMPTS]!,
        runAt: copy[RUN_AT]!,
        lastError,
        token: copy[TOKEN]!,
        leaseUntil: copy[LEASE_UNTIL]!,
        workerId: this.#m.workerNames.nameOf(copy[WORKER]!),
      };
    }
    return undefined;
  }

  /** The job as the journal stores it (under the lock: every move of a journaled queue is made there). */
  loggedJob(slot: number): LoggedJob {
    const record = this.#record(slot);
    return { ...this.#loggedMove(slot, record), ...this.#content(record), priority: record[PRIORITY]! };
  }

  loggedMove(slot: number): LoggedMove {
    return this.#loggedMove(slot, this.#record(slot));
  }

  #loggedMove(slot: number, record: Float64Array): LoggedMove {
    const status = this.#m.slots.status(slot);
    const finished = status === SUCCEEDED || status === CANCELLED;
    return {
      num: record[JOB_NUM]!,
      status: NAME_OF_STATUS[status],
      attempts: record[ATTEMPTS]!,
      runAt: record[RUN_AT]!,
      lastError: this.errorText(record),
      token: record[TOKEN]!,
      leaseUntil: status === RUNNING ? record[LEASE_UNTIL]! : 0,
      finishSeq: finished ? record[FINISH_SEQ]! : 0,
      workerId: this.#m.workerNames.nameOf(record[WORKER]!),
      moves: record[MOVES]!,
    };
  }

  #record(slot: number): Float64Array {
    return this.#m.slots.records.subarray(slot * RECORD_FIELDS, (slot + 1) * RECORD_FIELDS);
  }

  /** The job's type and payload, decoded from its arena chain (type bytes first). */
  #content(record: Float64Array): { type: string; payload: string } {
    const ref = record[DATA_REF]!;
    const typeBytes = record[TYPE_BYTES]!;
    return { type: this.#text(ref, 0, typeBytes), payload: this.#text(ref, typeBytes, record[PAYLOAD_BYTES]!) };
  }

  /**
   * A job's type, decoded once per run of jobs of one type: a worker leases
   * jobs of few types, so the last type's bytes are compared before decoding.
   */
  #typeOf(ref: number, bytes: number): string {
    const arena = this.#m.arena;
    if (bytes === this.#lastTypeBytes.length && arena.startsWith(ref, this.#lastTypeBytes)) return this.#lastType;
    const type = arena.read(ref, 0, bytes);
    this.#lastType = type;
    this.#lastTypeBytes = Buffer.from(type);
    return type;
  }

  #text(ref: number, skip: number, bytes: number): string {
    return this.#m.arena.read(ref, skip, bytes);
  }

  errorText(record: Float64Array): string | null {
    const errorRef = record[ERROR_REF]!;
    return errorRef > 0 ? this.#m.arena.read(errorRef, 0, record[ERROR_BYTES]!) : (CANNED_ERRORS.get(errorRef) ?? null);
  }
}
