import * as step from './memory/steps.js';
import { JobStatus, type Lease, type Payload } from '../types.js';
import { parsedHeaders } from '../validate/job-input.js';
import type { StoredResult } from '../validate/outcome.js';
import { Arena } from './tables/arena.js';
import {
  ATTEMPTS, ATTEMPT_LIMIT, CANCELLED, DATA_REF, DEAD, ERROR_BYTES, ERROR_DROPPED, ERROR_EMPTY, ERROR_FAILED, ERROR_LEASE_EXPIRED, ERROR_LENGTH_BYTES, ERROR_REF,
  FINISHED_AT, FINISH_SEQ, GROUP, HEADERS_BYTES, HEADERS_REF, JOB_NUM, KEY_BYTES, KEY_REF, KEY_TTL, LEASE_LENGTH, LEASE_UNTIL, MOVES, PAYLOAD_BYTES, PRIORITY,
  PARENT, PAYLOAD_BINARY, PROGRESS, PROGRESS_TOKEN, RECORD_FIELDS, WAITING, RESULT_BYTES, RESULT_REF, RUNNING, RUN_AT, STARTED_AT, SUBMITTED_AT, SUCCEEDED, TOKEN, TYPE, WORKER, attemptLimit, isBinaryPayload, isBusy, payloadLength, statusOf, type SlotStatus,
} from './memory/layout.js';
import type { QueueMemory } from './queue-memory.js';
import type { LoggedJob, LoggedMove } from './journal/movelog.js';
import { jobIdOf } from '../job-id.js';

/** The errors a record names by a negative ERROR_REF, without a chain. */
export const CANNED_ERRORS: ReadonlyMap<number, string> = new Map<number, string>([
  [ERROR_LEASE_EXPIRED, 'lease expired'],
  [ERROR_FAILED, 'failed'],
  [ERROR_DROPPED, '(error text dropped: no room left in the arena)'],
  [ERROR_EMPTY, ''],
]);

/** The public name of each slot status (FREE has none: a free slot holds no job). */
export const NAME_OF_STATUS: Record<SlotStatus, JobStatus> = [
  'FREE', JobStatus.PENDING, JobStatus.PENDING, JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED,
] as unknown as Record<SlotStatus, JobStatus>;

/** The strings of a claim's lease, decoded before its CAS (see Records#readLeaseStrings). */
export interface LeaseStrings {
  type: string;
  payload: Payload;
  /** Its headers' JSON text, or null for none. */
  headersText: string | null;
}

/** A job's fields as the core reads them, strings decoded. */
export interface JobRecord {
  jobNum: number;
  type: string;
  /** A string, or a Uint8Array (a copy of the shared bytes) for a binary payload. */
  payload: Payload;
  priority: number;
  status: SlotStatus;
  attempts: number;
  /** The attempts the job gets: its own limit, else the policy's. */
  maxAttempts: number;
  runAt: number;
  lastError: string | null;
  token: number;
  leaseUntil: number;
  workerId: string | null;
  /** A SUCCEEDED job's result, as JSON text, or a copy of a binary result's bytes; null for none. */
  result: StoredResult | null;
  /** The idempotent key, or null. */
  key: string | null;
  /** The job's own lease length (submit's timeoutMillis), or null. */
  timeoutMillis: number | null;
  /** The job's headers, as JSON text; null for none. */
  headers: string | null;
  /** When it was accepted; null: unknown (restored from a journal that did not keep it). */
  submittedAt: number | null;
  /** When its latest lease began; null: never leased, or unknown. */
  startedAt: number | null;
  /** When it finished, while SUCCEEDED, DEAD or CANCELLED; null otherwise, or unknown. */
  finishedAt: number | null;
  /** The progress its latest lease reported; null: none. */
  progress: number | null;
  /** The job's group, or null. */
  group: string | null;
  /** A flow's child: its PARENT column (its parent's number, negative under 'ignore'); 0: none. */
  parent: number;
  /** A flow's parent: its children not yet ended; 0: none. While DEAD, a flow's child's AWAITED (see layout.ts). */
  waiting: number;
}

/**
 * Reading jobs out of shared memory: the lease a claim made, a whole job for
 * a view, the rows the journal writes. Reads only; a record is consistent
 * when the slot's word is the same (and not BUSY) before and after it.
 */
export class Records {
  readonly #m: QueueMemory;
  readonly #copy = new Float64Array(RECORD_FIELDS);
  /** The record the journal's rows are read from (under the lock). */
  readonly #logged = new Float64Array(RECORD_FIELDS);
  /** The policy's maxAttempts: the limit of a job without one of its own. */
  readonly #policyMaxAttempts: number;

  constructor(memory: QueueMemory, policyMaxAttempts: number) {
    this.#m = memory;
    this.#policyMaxAttempts = policyMaxAttempts;
  }

  /**
   * Decodes into `into` the strings a claim's lease shows (its type, payload
   * and headers), from the record the claim read, before its CAS: the CAS
   * from the word read before the record proves them whole (relies on I4;
   * I3: the word carries a new version after any move). After the CAS they
   * could not be read safely: a cancel may end the new lease at once, an
   * eviction or a remove of the CANCELLED job then free its chunks, and a
   * submit reuse them, all before the claimer reads on (I29 keeps a RUNNING
   * job's chunks, not a cancelled one's). A binary payload in a run is a
   * view, no copy, valid while the lease is live (relies on I29).
   */
  readLeaseStrings(record: Float64Array, into: LeaseStrings): void {
    into.type = this.#typeOf(record);
    into.payload = this.#payloadOf(record, true);
    into.headersText = this.countedText(record, HEADERS_REF);
  }

  /** The lease a claim just made, from the record it wrote (its draft: the slot itself may move on at once) and the strings it decoded before its CAS. */
  lease(record: Float64Array, strings: LeaseStrings): Lease {
    return {
      jobId: jobIdOf(record[JOB_NUM]!),
      token: record[TOKEN]!,
      type: strings.type,
      payload: strings.payload,
      attempt: record[ATTEMPTS]!,
      maxAttempts: attemptLimit(record[ATTEMPT_LIMIT]!, this.#policyMaxAttempts),
      leaseUntil: record[LEASE_UNTIL]!,
      timeoutMillis: ownLeaseLength(record),
      headers: parsedHeaders(strings.headersText),
      waitMillis: waitOf(record),
    };
  }

  /**
   * The job in `slot`, read seqlock-style; undefined if the slot stays BUSY
   * (the caller waits for its mover under the lock). Without `withPayload`,
   * the payload is not read ('').
   */
  read(slot: number, withPayload = true): JobRecord | undefined {
    const { slots } = this.#m;
    const copy = this.#copy;
    for (let tries = 0; tries < 16; tries++) {
      const word = slots.settledWord(slot);
      if (isBusy(word)) return undefined;
      // Racy: a mover may be writing the record (checked by the word after it: relies on I3, I4).
      step.racyRead();
      slots.readInto(slot, copy);
      // The same word after the copy: no move wrote the record meanwhile (so its lengths and refs are whole).
      if (slots.word(slot) !== word) continue;
      // Racy: an eviction may be freeing the chunks read here (checked by the word after them).
      step.racyRead();
      const type = this.#typeOf(copy);
      const payload = withPayload ? this.#payloadOf(copy) : '';
      const lastError = this.errorText(copy);
      const result = this.resultOf(copy);
      const key = this.#keyOf(copy);
      const headers = this.countedText(copy, HEADERS_REF);
      // And after the strings are decoded: an eviction frees their chunks (after its move), and a submit may refill them.
      if (slots.word(slot) !== word) continue;
      return {
        jobNum: copy[JOB_NUM]!,
        type,
        payload,
        priority: copy[PRIORITY]!,
        status: statusOf(word),
        attempts: copy[ATTEMPTS]!,
        maxAttempts: attemptLimit(copy[ATTEMPT_LIMIT]!, this.#policyMaxAttempts),
        runAt: copy[RUN_AT]!,
        lastError,
        token: copy[TOKEN]!,
        leaseUntil: copy[LEASE_UNTIL]!,
        workerId: this.#m.workerNames.nameOf(copy[WORKER]!),
        result,
        key,
        timeoutMillis: ownLeaseLength(copy),
        headers,
        submittedAt: known(copy[SUBMITTED_AT]!),
        startedAt: startedAt(copy),
        finishedAt: finishedAt(copy, statusOf(word)),
        progress: progressOf(copy),
        group: this.#m.groupNames.nameOf(copy[GROUP]!),
        parent: copy[PARENT]!,
        waiting: copy[WAITING]!,
      };
    }
    return undefined;
  }

  /** The job as the journal stores it (under the lock: every move of a journaled queue is made there). */
  loggedJob(slot: number): LoggedJob {
    const record = this.#record(slot);
    // The move's fields, then the content: one object, no spread copy (this runs for every durable submit).
    const job = this.#loggedMove(slot, record) as LoggedJob;
    job.type = this.#typeOf(record);
    job.payload = this.#payloadOf(record);
    job.priority = record[PRIORITY]!;
    job.maxAttempts = record[ATTEMPT_LIMIT]!;
    job.key = this.#keyOf(record);
    job.keyTtl = record[KEY_TTL]!;
    job.timeout = record[LEASE_LENGTH]!;
    job.headers = this.countedText(record, HEADERS_REF);
    job.submittedAt = known(record[SUBMITTED_AT]!);
    job.group = this.#m.groupNames.nameOf(record[GROUP]!);
    job.parent = record[PARENT]!;
    return job;
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
      // A DEAD job's field holds when it died (DIED_AT): kept, for the retain option's DEAD limits after a reopen.
      leaseUntil: status === RUNNING || status === DEAD ? record[LEASE_UNTIL]! : 0,
      finishSeq: finished ? record[FINISH_SEQ]! : 0,
      workerId: this.#m.workerNames.nameOf(record[WORKER]!),
      moves: record[MOVES]!,
      result: this.resultOf(record),
      startedAt: startedAt(record),
      finishedAt: finishedAt(record, status),
      progress: progressOf(record),
      waiting: record[WAITING]!,
    };
  }

  #record(slot: number): Float64Array {
    return this.#m.slots.readInto(slot, this.#logged);
  }

  /** A job's type: this thread's copy of its type table entry, or (a type the table had no room for) from its data chain. */
  #typeOf(record: Float64Array): string {
    const type = record[TYPE]!;
    return type > 0 ? this.#m.typeNames.nameOf(type)! : this.#m.arena.read(record[DATA_REF]!, 0, -type);
  }

  /**
   * A job's payload: decoded text, or for a binary one (PAYLOAD_BINARY) its
   * bytes: with `asView` (a lease's), a view onto the arena when they are a
   * run (Arena#viewBytes; I29 says how long it is valid), else a copy. Every
   * other reader (a view of the job, the journal's rows) gets a copy: it
   * holds no lease, so the job may be evicted and its chunks reused at once.
   */
  #payloadOf(record: Float64Array, asView = false): Payload {
    const field = record[PAYLOAD_BYTES]!;
    const ref = record[DATA_REF]!;
    const skip = leadingTypeBytes(record[TYPE]!);
    if (!isBinaryPayload(field)) return this.#m.arena.read(ref, skip, field);
    const arena = this.#m.arena;
    return asView ? arena.viewBytes(ref, skip, payloadLength(field)) : arena.readBytes(ref, skip, payloadLength(field));
  }

  /**
   * The bytes of a job's data chain as they are: its type's bytes if they lead
   * it, then its payload's (what an undone edit stores again, text or binary
   * alike, with `storeBytes`).
   */
  dataBytes(record: Float64Array): Uint8Array {
    return this.#m.arena.readBytes(record[DATA_REF]!, 0, dataChainBytes(record));
  }

  /** The job's idempotent key, or null. */
  #keyOf(record: Float64Array): string | null {
    return record[KEY_REF]! > 0 ? this.#m.arena.readCounted(record[KEY_REF]!) : null;
  }

  errorText(record: Float64Array): string | null {
    const errorRef = record[ERROR_REF]!;
    return errorRef > 0 ? this.#m.arena.readCounted(errorRef) : (CANNED_ERRORS.get(errorRef) ?? null);
  }

  /** A record's result: its JSON text, or a copy of its bytes (a counted chain marked COUNTED_BINARY); null for none. */
  resultOf(record: Float64Array): StoredResult | null {
    const ref = record[RESULT_REF]!;
    if (!(ref > 0)) return null;
    const arena = this.#m.arena;
    return arena.countedBinary(ref) ? arena.readCountedBytes(ref) : arena.readCounted(ref);
  }

  /** The JSON text a record's RESULT_REF or HEADERS_REF field points at, or null for none. */
  countedText(record: Float64Array, field: typeof RESULT_REF | typeof HEADERS_REF): string | null {
    const ref = record[field]!;
    return ref > 0 ? this.#m.arena.readCounted(ref) : null;
  }
}

/** Bytes of the type that lead a job's data chain (from its TYPE field): those of a type the type table had no room for. */
export function leadingTypeBytes(type: number): number {
  return type < 0 ? -type : 0;
}

/** Bytes of a record's data chain: its leading type's, then its payload's. */
export function dataChainBytes(record: Float64Array): number {
  return leadingTypeBytes(record[TYPE]!) + payloadLength(record[PAYLOAD_BYTES]!);
}

/** A payload's bytes: a string's UTF-8, a Uint8Array's length. */
export function payloadByteLength(payload: Payload): number {
  return typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
}

/** The PAYLOAD_BYTES field of a payload of `payloadBytes` bytes: its length, marked PAYLOAD_BINARY for bytes. */
export function payloadField(payload: Payload, payloadBytes: number): number {
  return typeof payload === 'string' ? payloadBytes : payloadBytes | PAYLOAD_BINARY;
}

/**
 * Stores a job's data chain of `chainBytes` bytes: `leadingType` (a type the
 * type table has no entry for; '' for none), then the payload, as UTF-8 text
 * or as the bytes given. The first chunk, 0 for none, or NO_ROOM.
 */
export function storeData(arena: Arena, chainBytes: number, leadingType: string, payload: Payload): number {
  if (typeof payload === 'string') return leadingType === '' ? arena.store(chainBytes, payload) : arena.store(chainBytes, leadingType, payload);
  if (leadingType === '') return arena.storeBytes(payload);
  // Rare (the type table is full): the type's bytes and the payload joined first, one more copy for that job only.
  return arena.storeBytes(Buffer.concat([Buffer.from(leadingType), payload], chainBytes));
}

/** Bytes of a new job's data chain: its payload, after its type if the type table has no entry for it (`typeNumber` 0). */
export function dataBytes(typeNumber: number, typeBytes: number, payloadBytes: number): number {
  return payloadBytes + (typeNumber > 0 ? 0 : typeBytes);
}

/** Bytes of the chain of a counted text (a lastError, a result, a key) of `textBytes` bytes: its length, then the text. */
export function countedChainBytes(textBytes: number): number {
  return ERROR_LENGTH_BYTES + textBytes;
}

/** Arena chunks a counted text (a lastError, a result) takes; none for null. */
export function countedChunks(text: StoredResult | null): number {
  if (text === null) return 0;
  return Arena.chunksFor(countedChainBytes(typeof text === 'string' ? Buffer.byteLength(text) : text.length));
}

/** Arena chunks of the counted chain `ref` whose text is `bytes` long: none for no chain (a ref <= 0). */
function chainChunks(ref: number, bytes: number): number {
  return ref > 0 ? Arena.chunksFor(countedChainBytes(bytes)) : 0;
}

/** Arena chunks a record's strings hold: its data chain, and its lastError's, result's, key's and headers'. */
export function chunksOf(record: Float64Array): number {
  return (
    Arena.chunksFor(dataChainBytes(record)) +
    chainChunks(record[ERROR_REF]!, record[ERROR_BYTES]!) +
    chainChunks(record[RESULT_REF]!, record[RESULT_BYTES]!) +
    chainChunks(record[KEY_REF]!, record[KEY_BYTES]!) +
    chainChunks(record[HEADERS_REF]!, record[HEADERS_BYTES]!)
  );
}

/** For a move into a finished status at `at`: notes when (FINISHED_AT; a keyed job's key TTL runs from then). */
export function noteFinish(record: Float64Array, at: number): void {
  record[FINISHED_AT] = at;
}

/** A time field as the API shows it: null for NaN (unknown: restored from a journal that did not keep it). */
function known(time: number): number | null {
  return Number.isNaN(time) ? null : time;
}

/** When the latest lease began: null if the job was never leased (no token yet: tokens start at 1), or it is unknown. */
function startedAt(record: Float64Array): number | null {
  return record[TOKEN]! > 0 ? known(record[STARTED_AT]!) : null;
}

/** The progress the job's latest lease reported: null if it reported none (PROGRESS_TOKEN names an earlier lease, or none). */
function progressOf(record: Float64Array): number | null {
  return record[PROGRESS_TOKEN]! > 0 && record[PROGRESS_TOKEN] === record[TOKEN] ? record[PROGRESS]! : null;
}

/** When a job in `status` finished: null unless it is finished (a retried dead job's FINISHED_AT is stale), or unknown. */
function finishedAt(record: Float64Array, status: SlotStatus): number | null {
  return status === SUCCEEDED || status === DEAD || status === CANCELLED ? known(record[FINISHED_AT]!) : null;
}

/**
 * How long a lease's job waited (the claim's record): from when it was due
 * (its RUN_AT, or SUBMITTED_AT if that is later: a runAt in the past at
 * submit) to the lease's start; never below 0 (a clock that went back).
 */
export function waitOf(record: Float64Array): number {
  const runAt = record[RUN_AT]!;
  const submittedAt = record[SUBMITTED_AT]!;
  const due = submittedAt > runAt ? submittedAt : runAt;
  const wait = record[STARTED_AT]! - due;
  return wait > 0 ? wait : 0;
}

/** The job's own lease length (LEASE_LENGTH), or null for none. */
function ownLeaseLength(record: Float64Array): number | null {
  return record[LEASE_LENGTH]! > 0 ? record[LEASE_LENGTH]! : null;
}
