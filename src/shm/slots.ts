import type { Arena } from './arena.js';
import {
  ATTEMPTS, ATTEMPT_LIMIT, BUSY, DATA_REF, ERROR_BYTES, ERROR_REF, FINISHED_AT, HEADERS_BYTES, HEADERS_REF, JOB_NUM, KEY_BYTES, KEY_REF, KEY_TTL, LEASE_LENGTH,
  LEASE_UNTIL, MOVES, PAYLOAD_BYTES, PRIORITY, RECORD_COLUMNS, RESULT_BYTES, RESULT_REF, RUN_AT, STATUS_MASK, TOKEN, TYPE, WORKER, recordColumnOffsets,
  type RecordColumn, type SlotStatus,
} from './layout.js';

/** Spins a reader waits on a BUSY word before it gives up and takes the slow path. */
const BUSY_SPINS = 64;

/**
 * The slot table: one lease word per slot (THE TRUTH) and one record per
 * slot, kept as columns (one typed array per field, see RECORD_COLUMNS in
 * layout.ts). A record is written only by the thread whose intent the slot's
 * BUSY word names (see moves.ts), so a reader that sees the same non-busy
 * word before and after reading fields has read one state.
 */
export class SlotTable {
  readonly words: Int32Array;
  readonly capacity: number;
  /** Every field's column, by field number. */
  readonly #columns: RecordColumn[];
  readonly jobNums: RecordColumn;
  readonly priorities: RecordColumn;
  readonly runAts: RecordColumn;
  readonly tokens: RecordColumn;
  readonly leaseUntils: RecordColumn;
  readonly moves: RecordColumn;
  readonly dataRefs: RecordColumn;
  readonly payloadBytes: RecordColumn;
  readonly errorRefs: RecordColumn;
  readonly attempts: RecordColumn;
  readonly attemptLimits: RecordColumn;
  readonly resultRefs: RecordColumn;
  readonly headersRefs: RecordColumn;
  readonly types: RecordColumn;
  readonly workers: RecordColumn;
  readonly keyRefs: RecordColumn;
  readonly keyTtls: RecordColumn;
  readonly finishedAts: RecordColumn;
  readonly leaseLengths: RecordColumn;

  /** Where an error's byte length is kept: at the head of its chain. */
  readonly #arena: Arena;

  constructor(words: Int32Array, records: SharedArrayBuffer, arena: Arena) {
    this.words = words;
    this.#arena = arena;
    const capacity = (this.capacity = words.length);
    const offsets = recordColumnOffsets(capacity);
    const columns: RecordColumn[] = (this.#columns = []);
    for (const [field, array] of RECORD_COLUMNS) columns[field] = new array(records, offsets[field]!, capacity);
    this.jobNums = columns[JOB_NUM]!;
    this.priorities = columns[PRIORITY]!;
    this.runAts = columns[RUN_AT]!;
    this.tokens = columns[TOKEN]!;
    this.leaseUntils = columns[LEASE_UNTIL]!;
    this.moves = columns[MOVES]!;
    this.dataRefs = columns[DATA_REF]!;
    this.payloadBytes = columns[PAYLOAD_BYTES]!;
    this.errorRefs = columns[ERROR_REF]!;
    this.attempts = columns[ATTEMPTS]!;
    this.attemptLimits = columns[ATTEMPT_LIMIT]!;
    this.resultRefs = columns[RESULT_REF]!;
    this.headersRefs = columns[HEADERS_REF]!;
    this.types = columns[TYPE]!;
    this.workers = columns[WORKER]!;
    this.keyRefs = columns[KEY_REF]!;
    this.keyTtls = columns[KEY_TTL]!;
    this.finishedAts = columns[FINISHED_AT]!;
    this.leaseLengths = columns[LEASE_LENGTH]!;
  }

  word(slot: number): number {
    // The truth, read as it is now: every decision about a slot starts here.
    return Atomics.load(this.words, slot);
  }

  status(slot: number): SlotStatus {
    return (this.word(slot) & STATUS_MASK) as SlotStatus;
  }

  /**
   * The slot's word once it is not BUSY, or BUSY if it stays busy for a few
   * spins (the owner stalled, or died: the caller takes the slow path).
   */
  settledWord(slot: number): number {
    for (let spin = 0; ; spin++) {
      // A mover holds BUSY for nanoseconds: look again rather than give up at once.
      const word = Atomics.load(this.words, slot);
      if ((word & BUSY) === 0 || spin >= BUSY_SPINS) return word;
    }
  }

  /** One field of the slot's record (not ERROR_BYTES, RESULT_BYTES, KEY_BYTES or HEADERS_BYTES, which have no column: see readInto). */
  get(slot: number, field: number): number {
    return this.#columns[field]![slot]!;
  }

  /** Copies the slot's record into `record` (RECORD_FIELDS float64s, by field number); returns it. */
  readInto(slot: number, record: Float64Array): Float64Array {
    record[JOB_NUM] = this.jobNums[slot]!;
    record[PRIORITY] = this.priorities[slot]!;
    record[RUN_AT] = this.runAts[slot]!;
    record[ATTEMPTS] = this.attempts[slot]!;
    record[TOKEN] = this.tokens[slot]!;
    record[LEASE_UNTIL] = this.leaseUntils[slot]!;
    record[DATA_REF] = this.dataRefs[slot]!;
    record[TYPE] = this.types[slot]!;
    record[PAYLOAD_BYTES] = this.payloadBytes[slot]!;
    const errorRef = (record[ERROR_REF] = this.errorRefs[slot]!);
    record[ERROR_BYTES] = errorRef > 0 ? this.#arena.countedBytes(errorRef) : 0;
    record[WORKER] = this.workers[slot]!;
    record[MOVES] = this.moves[slot]!;
    record[ATTEMPT_LIMIT] = this.attemptLimits[slot]!;
    const resultRef = (record[RESULT_REF] = this.resultRefs[slot]!);
    record[RESULT_BYTES] = resultRef > 0 ? this.#arena.countedBytes(resultRef) : 0;
    // The key's columns mean something only with a key: a job without one reads one column for them.
    const keyRef = (record[KEY_REF] = this.keyRefs[slot]!);
    const keyed = keyRef > 0;
    record[KEY_BYTES] = keyed ? this.#arena.countedBytes(keyRef) : 0;
    record[KEY_TTL] = keyed ? this.keyTtls[slot]! : 0;
    record[FINISHED_AT] = keyed ? this.finishedAts[slot]! : 0;
    record[LEASE_LENGTH] = this.leaseLengths[slot]!;
    const headersRef = (record[HEADERS_REF] = this.headersRefs[slot]!);
    record[HEADERS_BYTES] = headersRef > 0 ? this.#arena.countedBytes(headersRef) : 0;
    return record;
  }

  /**
   * Writes `record` as the slot's record; only inside a move of the slot (the
   * word BUSY, naming the caller). Only the fields that changed are stored:
   * neighbouring slots share each column's cache lines, and a store of an
   * unchanged value would still take the line from the thread working on the
   * slot next door (a claim changes four fields, a complete one). The same
   * keeps the pages of columns most queues never set (MOVES without a
   * journal, ATTEMPT_LIMIT) untouched, so they cost no memory.
   */
  write(slot: number, record: Float64Array): void {
    // Unrolled, one typed-array class per line: a loop over the columns would make every access megamorphic.
    if (this.jobNums[slot] !== record[JOB_NUM]) this.jobNums[slot] = record[JOB_NUM]!;
    if (this.priorities[slot] !== record[PRIORITY]) this.priorities[slot] = record[PRIORITY]!;
    if (this.runAts[slot] !== record[RUN_AT]) this.runAts[slot] = record[RUN_AT]!;
    if (this.attempts[slot] !== record[ATTEMPTS]) this.attempts[slot] = record[ATTEMPTS]!;
    if (this.tokens[slot] !== record[TOKEN]) this.tokens[slot] = record[TOKEN]!;
    if (this.leaseUntils[slot] !== record[LEASE_UNTIL]) this.leaseUntils[slot] = record[LEASE_UNTIL]!;
    if (this.dataRefs[slot] !== record[DATA_REF]) this.dataRefs[slot] = record[DATA_REF]!;
    if (this.types[slot] !== record[TYPE]) this.types[slot] = record[TYPE]!;
    if (this.payloadBytes[slot] !== record[PAYLOAD_BYTES]) this.payloadBytes[slot] = record[PAYLOAD_BYTES]!;
    // ERROR_BYTES is not written: the error's chain holds it.
    if (this.errorRefs[slot] !== record[ERROR_REF]) this.errorRefs[slot] = record[ERROR_REF]!;
    if (this.workers[slot] !== record[WORKER]) this.workers[slot] = record[WORKER]!;
    if (this.moves[slot] !== record[MOVES]) this.moves[slot] = record[MOVES]!;
    if (this.attemptLimits[slot] !== record[ATTEMPT_LIMIT]) this.attemptLimits[slot] = record[ATTEMPT_LIMIT]!;
    // And a result, which only a complete that carries one sets (RESULT_BYTES, like ERROR_BYTES, lives in the chain).
    if (this.resultRefs[slot] !== record[RESULT_REF]) this.resultRefs[slot] = record[RESULT_REF]!;
    // Likewise a job's own lease length, and an idempotent key and what goes with it (KEY_BYTES: the key's
    // chain holds it): a slot that never held a keyed job reads one column for them, and writes none.
    if (record[KEY_REF] !== 0 || this.keyRefs[slot] !== 0) {
      this.keyRefs[slot] = record[KEY_REF]!;
      this.keyTtls[slot] = record[KEY_TTL]!;
      this.finishedAts[slot] = record[FINISHED_AT]!;
    }
    if (this.leaseLengths[slot] !== record[LEASE_LENGTH]) this.leaseLengths[slot] = record[LEASE_LENGTH]!;
    // And headers, which only a submit that carries them sets.
    if (this.headersRefs[slot] !== record[HEADERS_REF]) this.headersRefs[slot] = record[HEADERS_REF]!;
  }
}
