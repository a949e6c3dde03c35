import type { WordAccess } from '../memory/access.js';
import type { Arena } from './arena.js';
import { elementsIn, growTo } from '../memory/growth.js';
import {
  ATTEMPTS, ATTEMPT_LIMIT, BUSY, DATA_REF, GROUP, PARENT, WAITING, ERROR_BYTES, ERROR_REF, FINISHED_AT, HEADERS_BYTES, HEADERS_REF, JOB_NUM, KEY_BYTES, KEY_REF, KEY_TTL, LEASE_LENGTH,
  LEASE_UNTIL, MOVES, PAYLOAD_BYTES, PRIORITY, RECORD_COLUMNS, RESULT_BYTES, RESULT_REF, RUN_AT, STARTED_AT, STATUS_MASK, PROGRESS, PROGRESS_TOKEN, SUBMITTED_AT, TOKEN, TYPE, WORKER, ALL_FIELDS, fieldBit, FREE, INITIAL_SLOTS,
  type ColumnArray, type RecordColumn, type RecordColumnName, type SlotStatus,
} from '../memory/layout.js';

/** Spins a reader waits on a BUSY word before it gives up and takes the slow path. */
const BUSY_SPINS = 64;

// Each column's bit in a move's mask (see `write`).
const JOB_NUM_BIT = fieldBit(JOB_NUM);
const PRIORITY_BIT = fieldBit(PRIORITY);
const RUN_AT_BIT = fieldBit(RUN_AT);
const ATTEMPTS_BIT = fieldBit(ATTEMPTS);
const TOKEN_BIT = fieldBit(TOKEN);
const LEASE_UNTIL_BIT = fieldBit(LEASE_UNTIL);
const DATA_REF_BIT = fieldBit(DATA_REF);
const TYPE_BIT = fieldBit(TYPE);
const PAYLOAD_BYTES_BIT = fieldBit(PAYLOAD_BYTES);
const ERROR_REF_BIT = fieldBit(ERROR_REF);
const WORKER_BIT = fieldBit(WORKER);
const MOVES_BIT = fieldBit(MOVES);
const ATTEMPT_LIMIT_BIT = fieldBit(ATTEMPT_LIMIT);
const RESULT_REF_BIT = fieldBit(RESULT_REF);
const KEY_REF_BIT = fieldBit(KEY_REF);
const KEY_TTL_BIT = fieldBit(KEY_TTL);
const FINISHED_AT_BIT = fieldBit(FINISHED_AT);
const KEY_FIELDS = KEY_REF_BIT | KEY_TTL_BIT;
const SUBMITTED_AT_BIT = fieldBit(SUBMITTED_AT);
const STARTED_AT_BIT = fieldBit(STARTED_AT);
const LEASE_LENGTH_BIT = fieldBit(LEASE_LENGTH);
const HEADERS_REF_BIT = fieldBit(HEADERS_REF);
const PROGRESS_BIT = fieldBit(PROGRESS);
const PROGRESS_TOKEN_BIT = fieldBit(PROGRESS_TOKEN);
const GROUP_BIT = fieldBit(GROUP);
const PARENT_BIT = fieldBit(PARENT);
const WAITING_BIT = fieldBit(WAITING);

/**
 * The slot table: one lease word per slot (THE TRUTH) and one record per
 * slot, kept as columns (one typed array per field, see RECORD_COLUMNS in
 * layout.ts). A record is written only by the thread whose intent the slot's
 * BUSY word names (I4, I5), so a reader that sees the same non-busy
 * word before and after reading fields has read one state.
 */
export class SlotTable {
  /**
   * This thread's views: fixed-length, over the slots the buffers held when
   * they were made, and re-made (`#remake`) when a slot past them is met
   * (see Growth in layout.ts). Read them through the table each time, never
   * keep one: a kept view may be an old one.
   */
  words: Int32Array;
  /** Slots the buffers may grow to. */
  readonly capacity: number;
  readonly #wordBuffer: SharedArrayBuffer;
  readonly #columnBuffers: Record<RecordColumnName, SharedArrayBuffer>;
  /** Slots this thread's views cover. */
  #viewSlots = 0;
  /** Every field's column, by field number. */
  #columns: RecordColumn[] = [];
  jobNums!: RecordColumn;
  priorities!: RecordColumn;
  runAts!: RecordColumn;
  tokens!: RecordColumn;
  leaseUntils!: RecordColumn;
  moves!: RecordColumn;
  dataRefs!: RecordColumn;
  payloadBytes!: RecordColumn;
  errorRefs!: RecordColumn;
  attempts!: RecordColumn;
  attemptLimits!: RecordColumn;
  resultRefs!: RecordColumn;
  headersRefs!: RecordColumn;
  types!: RecordColumn;
  workers!: RecordColumn;
  keyRefs!: RecordColumn;
  keyTtls!: RecordColumn;
  finishedAts!: RecordColumn;
  submittedAts!: RecordColumn;
  startedAts!: RecordColumn;
  progresses!: RecordColumn;
  progressTokens!: RecordColumn;
  leaseLengths!: RecordColumn;
  groups!: RecordColumn;
  parents!: RecordColumn;
  waitings!: RecordColumn;

  /** Where an error's byte length is kept: at the head of its chain. */
  readonly #arena: Arena;
  readonly #access: WordAccess;

  /** Over the lease words' buffer and one buffer per record column (growable, see `grow`). */
  constructor(words: SharedArrayBuffer, columns: Record<RecordColumnName, SharedArrayBuffer>, arena: Arena, access: WordAccess) {
    this.#wordBuffer = words;
    this.#columnBuffers = columns;
    this.#arena = arena;
    this.#access = access;
    this.capacity = words.maxByteLength / Int32Array.BYTES_PER_ELEMENT;
    this.words = this.#remake();
  }

  /**
   * Makes this thread's views over the slots the buffers hold now; returns the
   * words' view. The words' buffer is grown last (see `grow`), so every
   * column holds at least as many slots as it.
   */
  #remake(): Int32Array {
    const slots = (this.#viewSlots = elementsIn(this.#wordBuffer, Int32Array.BYTES_PER_ELEMENT));
    const columns: RecordColumn[] = (this.#columns = []);
    for (const [field, array, name] of RECORD_COLUMNS) columns[field] = new (array as ColumnArray)(this.#columnBuffers[name], 0, slots);
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
    this.submittedAts = columns[SUBMITTED_AT]!;
    this.startedAts = columns[STARTED_AT]!;
    this.progresses = columns[PROGRESS]!;
    this.progressTokens = columns[PROGRESS_TOKEN]!;
    this.leaseLengths = columns[LEASE_LENGTH]!;
    this.groups = columns[GROUP]!;
    this.parents = columns[PARENT]!;
    this.waitings = columns[WAITING]!;
    return (this.words = new Int32Array(this.#wordBuffer, 0, slots));
  }

  /**
   * Whether this thread's views cover `slot`, re-made if they did not: false
   * if the buffers do not reach it either, a slot never used (FREE, its
   * record all zero). A slot is grown into before it is first used (`grow`),
   * so a slot number read anywhere is covered once the views are re-made.
   */
  reach(slot: number): boolean {
    if (slot < this.#viewSlots) return true;
    this.#remake();
    return slot < this.#viewSlots;
  }

  /** Re-makes this thread's views if `slots` (the slots ever used, SLOT_HIGH_WATER) have passed them: at the start of each lock hold. */
  keepUp(slots: number): void {
    if (slots > this.#viewSlots) this.#remake();
  }

  /**
   * Grows the buffers to hold at least `slots` slots (doubling, from
   * INITIAL_SLOTS, at most `capacity`), the columns first and the words
   * last; by the lock holder, before it hands out a slot past them
   * (SLOT_HIGH_WATER).
   */
  grow(slots: number): void {
    if (slots <= this.#viewSlots) return;
    const target = Math.min(this.capacity, Math.max(slots, 2 * this.#viewSlots, INITIAL_SLOTS));
    for (const [, array, name] of RECORD_COLUMNS) growTo(this.#columnBuffers[name], target * array.BYTES_PER_ELEMENT);
    growTo(this.#wordBuffer, target * Int32Array.BYTES_PER_ELEMENT);
    this.#remake();
  }

  /** The slot's JOB_NUM; 0 for a slot never used. */
  jobNum(slot: number): number {
    return this.reach(slot) ? this.jobNums[slot]! : 0;
  }

  word(slot: number): number {
    // A slot past this thread's views: re-made over the grown buffers, or never used (FREE).
    if (slot >= this.#viewSlots && !this.reach(slot)) return FREE;
    // The truth, read as it is now: every decision about a slot starts here.
    return this.#access.load(this.words, slot);
  }

  status(slot: number): SlotStatus {
    return (this.word(slot) & STATUS_MASK) as SlotStatus;
  }

  /**
   * The slot's word once it is not BUSY, or BUSY if it stays busy for a few
   * spins (the owner stalled, or died: the caller takes the slow path).
   */
  settledWord(slot: number): number {
    if (slot >= this.#viewSlots && !this.reach(slot)) return FREE;
    for (let spin = 0; ; spin++) {
      // A mover holds BUSY for nanoseconds: look again rather than give up at once.
      const word = this.#access.load(this.words, slot);
      if ((word & BUSY) === 0 || spin >= BUSY_SPINS) return word;
    }
  }

  /** One field of the slot's record (not ERROR_BYTES, RESULT_BYTES, KEY_BYTES or HEADERS_BYTES, which have no column: see readInto). */
  get(slot: number, field: number): number {
    return this.#columns[field]![slot]!;
  }

  /** Copies the slot's record into `record` (RECORD_FIELDS float64s, by field number); returns it. */
  readInto(slot: number, record: Float64Array): Float64Array {
    this.readLease(slot, record);
    record[PRIORITY] = this.priorities[slot]!;
    record[LEASE_UNTIL] = this.leaseUntils[slot]!;
    record[WORKER] = this.workers[slot]!;
    record[MOVES] = this.moves[slot]!;
    record[FINISHED_AT] = this.finishedAts[slot]!;
    record[STARTED_AT] = this.startedAts[slot]!;
    // Progress means something only with a report of some lease: a job that never reported reads one column for it.
    record[PROGRESS_TOKEN] = this.progressTokens[slot]!;
    record[PROGRESS] = record[PROGRESS_TOKEN]! > 0 ? this.progresses[slot]! : 0;
    record[GROUP] = this.groups[slot]!;
    record[PARENT] = this.parents[slot]!;
    record[WAITING] = this.waitings[slot]!;
    this.#readChains(slot, record);
    // The key's columns mean something only with a key: a job without one reads one column for them.
    record[KEY_TTL] = record[KEY_REF]! > 0 ? this.keyTtls[slot]! : 0;
    return record;
  }

  /**
   * Copies what a claim reads and its Lease shows into `record`: the job's
   * number, type, payload, headers, attempts and their limit, its own lease
   * length, the token of its last lease, and the times its wait is counted
   * from (RUN_AT, SUBMITTED_AT) (the rest of `record` is left).
   */
  readLease(slot: number, record: Float64Array): void {
    record[JOB_NUM] = this.jobNums[slot]!;
    record[RUN_AT] = this.runAts[slot]!;
    record[SUBMITTED_AT] = this.submittedAts[slot]!;
    record[ATTEMPTS] = this.attempts[slot]!;
    record[TOKEN] = this.tokens[slot]!;
    record[ATTEMPT_LIMIT] = this.attemptLimits[slot]!;
    record[LEASE_LENGTH] = this.leaseLengths[slot]!;
    this.#readData(slot, record);
  }

  /** Copies the references to every string of the job, with their byte lengths, into `record`: what `chunksOf` counts. */
  readStrings(slot: number, record: Float64Array): void {
    this.#readData(slot, record);
    this.#readChains(slot, record);
  }

  /** The job's lastError, result and key chains, with their byte lengths. */
  #readChains(slot: number, record: Float64Array): void {
    record[ERROR_REF] = this.errorRefs[slot]!;
    record[ERROR_BYTES] = this.#countedBytes(record[ERROR_REF]!);
    record[RESULT_REF] = this.resultRefs[slot]!;
    record[RESULT_BYTES] = this.#countedBytes(record[RESULT_REF]!);
    record[KEY_REF] = this.keyRefs[slot]!;
    record[KEY_BYTES] = this.#countedBytes(record[KEY_REF]!);
  }

  /** The job's type, payload and headers. */
  #readData(slot: number, record: Float64Array): void {
    record[DATA_REF] = this.dataRefs[slot]!;
    record[TYPE] = this.types[slot]!;
    record[PAYLOAD_BYTES] = this.payloadBytes[slot]!;
    record[HEADERS_REF] = this.headersRefs[slot]!;
    record[HEADERS_BYTES] = this.#countedBytes(record[HEADERS_REF]!);
  }

  /** The text length at the head of a counted chain (an error's, a result's, a key's, headers'); 0 for none (a ref <= 0: none, or a canned error). */
  #countedBytes(ref: number): number {
    return ref > 0 ? this.#arena.countedBytes(ref) : 0;
  }

  /**
   * Writes the fields of `record` that `mask` names (fieldBit of each; a
   * move's mask, see moves.ts) as the slot's (keeps I4); only inside a move of the slot
   * (the word BUSY, naming the caller), or by an exclusive queue. Only the
   * fields that changed are stored: neighbouring slots share each column's
   * cache lines, and a store of an unchanged value would still take the line
   * from the thread working on the slot next door. The same keeps the pages
   * of columns most queues never set (MOVES without a journal, ATTEMPT_LIMIT)
   * untouched, so they cost no memory; and a claim, which sets four fields,
   * reads no other column at all.
   */
  write(slot: number, record: Float64Array, mask = ALL_FIELDS): void {
    // Unrolled, one typed-array class per line: a loop over the columns would make every access megamorphic.
    if ((mask & JOB_NUM_BIT) !== 0 && this.jobNums[slot] !== record[JOB_NUM]) this.jobNums[slot] = record[JOB_NUM]!;
    if ((mask & PRIORITY_BIT) !== 0 && this.priorities[slot] !== record[PRIORITY]) this.priorities[slot] = record[PRIORITY]!;
    if ((mask & RUN_AT_BIT) !== 0 && this.runAts[slot] !== record[RUN_AT]) this.runAts[slot] = record[RUN_AT]!;
    if ((mask & ATTEMPTS_BIT) !== 0 && this.attempts[slot] !== record[ATTEMPTS]) this.attempts[slot] = record[ATTEMPTS]!;
    if ((mask & TOKEN_BIT) !== 0 && this.tokens[slot] !== record[TOKEN]) this.tokens[slot] = record[TOKEN]!;
    if ((mask & LEASE_UNTIL_BIT) !== 0 && this.leaseUntils[slot] !== record[LEASE_UNTIL]) this.leaseUntils[slot] = record[LEASE_UNTIL]!;
    if ((mask & DATA_REF_BIT) !== 0 && this.dataRefs[slot] !== record[DATA_REF]) this.dataRefs[slot] = record[DATA_REF]!;
    if ((mask & TYPE_BIT) !== 0 && this.types[slot] !== record[TYPE]) this.types[slot] = record[TYPE]!;
    if ((mask & PAYLOAD_BYTES_BIT) !== 0 && this.payloadBytes[slot] !== record[PAYLOAD_BYTES]) this.payloadBytes[slot] = record[PAYLOAD_BYTES]!;
    // ERROR_BYTES is not written: the error's chain holds it.
    if ((mask & ERROR_REF_BIT) !== 0 && this.errorRefs[slot] !== record[ERROR_REF]) this.errorRefs[slot] = record[ERROR_REF]!;
    if ((mask & WORKER_BIT) !== 0 && this.workers[slot] !== record[WORKER]) this.workers[slot] = record[WORKER]!;
    if ((mask & MOVES_BIT) !== 0 && this.moves[slot] !== record[MOVES]) this.moves[slot] = record[MOVES]!;
    if ((mask & ATTEMPT_LIMIT_BIT) !== 0 && this.attemptLimits[slot] !== record[ATTEMPT_LIMIT]) this.attemptLimits[slot] = record[ATTEMPT_LIMIT]!;
    // And a result, which only a complete that carries one sets (RESULT_BYTES, like ERROR_BYTES, lives in the chain).
    if ((mask & RESULT_REF_BIT) !== 0 && this.resultRefs[slot] !== record[RESULT_REF]) this.resultRefs[slot] = record[RESULT_REF]!;
    // Likewise a job's own lease length, and an idempotent key and what goes with it (KEY_BYTES: the key's
    // chain holds it): a slot that never held a keyed job reads one column for them, and writes none.
    if ((mask & KEY_FIELDS) !== 0 && (record[KEY_REF] !== 0 || this.keyRefs[slot] !== 0)) {
      if ((mask & KEY_REF_BIT) !== 0) this.keyRefs[slot] = record[KEY_REF]!;
      if ((mask & KEY_TTL_BIT) !== 0) this.keyTtls[slot] = record[KEY_TTL]!;
    }
    // The times (NaN, unknown, is stored whenever it is set: it equals nothing). A pending job writes only SUBMITTED_AT.
    if ((mask & SUBMITTED_AT_BIT) !== 0 && this.submittedAts[slot] !== record[SUBMITTED_AT]) this.submittedAts[slot] = record[SUBMITTED_AT]!;
    if ((mask & STARTED_AT_BIT) !== 0 && this.startedAts[slot] !== record[STARTED_AT]) this.startedAts[slot] = record[STARTED_AT]!;
    if ((mask & FINISHED_AT_BIT) !== 0 && this.finishedAts[slot] !== record[FINISHED_AT]) this.finishedAts[slot] = record[FINISHED_AT]!;
    if ((mask & LEASE_LENGTH_BIT) !== 0 && this.leaseLengths[slot] !== record[LEASE_LENGTH]) this.leaseLengths[slot] = record[LEASE_LENGTH]!;
    // And progress, which only the progress move sets (a restore too; a reused slot's place writes the zeros).
    if ((mask & PROGRESS_BIT) !== 0 && this.progresses[slot] !== record[PROGRESS]) this.progresses[slot] = record[PROGRESS]!;
    if ((mask & PROGRESS_TOKEN_BIT) !== 0 && this.progressTokens[slot] !== record[PROGRESS_TOKEN]) this.progressTokens[slot] = record[PROGRESS_TOKEN]!;
    // And headers, which only a submit that carries them sets.
    if ((mask & HEADERS_REF_BIT) !== 0 && this.headersRefs[slot] !== record[HEADERS_REF]) this.headersRefs[slot] = record[HEADERS_REF]!;
    // And a group, which only a submit that names one sets.
    if ((mask & GROUP_BIT) !== 0 && this.groups[slot] !== record[GROUP]) this.groups[slot] = record[GROUP]!;
    // And a flow's links, which only a flow's submit and its parent's moves set (see moves/flows.ts).
    if ((mask & PARENT_BIT) !== 0 && this.parents[slot] !== record[PARENT]) this.parents[slot] = record[PARENT]!;
    if ((mask & WAITING_BIT) !== 0 && this.waitings[slot] !== record[WAITING]) this.waitings[slot] = record[WAITING]!;
  }
}
