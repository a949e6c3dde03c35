/**
 * A history log in shared memory: any number of threads record the calls they
 * make on one queue, each into its own block of a SharedArrayBuffer, stamped
 * from one shared counter; the thread that made the log reads every call back
 * as a `Call` list for the checker.
 *
 * Layout: one Int32 stamp counter (its own buffer) and one buffer per block:
 *
 *   block: [used bytes: int32][overflowed: int32] records...
 *   record: [length: u32][kind: u8][seq: u32][stamp: f64][JSON: length - HEADER bytes]
 *
 * A recorder writes an invocation record (kind INVOKED, the call's arguments)
 * before the call and a response record (kind RETURNED, its result) after it,
 * both with the call's sequence number in its block, so that calls of one
 * block may overlap (async calls). Each record is written in full first and
 * then published by a store of `used`: a reader (or a thread killed mid-write)
 * never sees half a record. Only the block's recorder writes its block.
 *
 * A call whose invocation was published but never its response (its thread
 * was killed inside it) reads back as pending. A record that does not fit
 * is not written and marks the block overflowed: the program's calls go on
 * undisturbed, and `calls()` refuses to read a history with holes.
 */
import { InvalidArgumentError, QueueFullError } from '../errors.js';
import type { Call, CallArgs, Result } from './history.js';
import { NO_RESPONSE } from './history.js';
import { CallRecorder } from './recorder.js';
import type { StampSource } from './stamps.js';

/** Block header words (Int32 indexes). */
const USED = 0;
const OVERFLOWED = 1;
const HEADER_WORDS = 2;
const BLOCK_HEADER_BYTES = HEADER_WORDS * Int32Array.BYTES_PER_ELEMENT;
/** Record header: length u32, kind u8 (padded to 4), seq u32, stamp f64. */
const RECORD_HEADER_BYTES = 4 + 4 + 4 + 8;
/** Records start at multiples of 8 so a stamp never straddles a word. */
const ALIGN = 8;

const INVOKED = 1;
const RETURNED = 2;

export interface HistoryLogOptions {
  /** Blocks: one per recorder (a thread, or a process's share of the log). */
  blocks: number;
  /** Bytes of each block; a call takes about 100 to 400 bytes. @default 1 MiB */
  bytesPerBlock?: number;
}

const kHistoryLogDefaults = { bytesPerBlock: 1 << 20 } as const;

/** A log as it crosses to another thread (`postMessage` it, or put it in `workerData`). */
export interface HistoryLogHandle {
  readonly kind: 'leasehold/history-log';
  readonly stamps: SharedArrayBuffer;
  readonly blocks: readonly SharedArrayBuffer[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class HistoryLog {
  readonly #stamps: Int32Array;
  readonly #handle: HistoryLogHandle;

  private constructor(handle: HistoryLogHandle) {
    this.#handle = handle;
    this.#stamps = new Int32Array(handle.stamps);
  }

  /** A new empty log of `blocks` blocks (all-zero memory is an empty log). */
  static create(options: HistoryLogOptions): HistoryLog {
    const { blocks, bytesPerBlock } = { ...kHistoryLogDefaults, ...options };
    if (!Number.isSafeInteger(blocks) || !(blocks >= 1 && blocks <= 4096)) {
      throw new InvalidArgumentError(`Expected \`blocks\` to be an integer from 1 to 4096, got \`${String(blocks)}\` (${typeof blocks})`);
    }
    if (!Number.isSafeInteger(bytesPerBlock) || !(bytesPerBlock >= 1024 && bytesPerBlock <= 2 ** 30)) {
      throw new InvalidArgumentError(`Expected \`bytesPerBlock\` to be an integer from 1024 to 2^30, got \`${String(bytesPerBlock)}\` (${typeof bytesPerBlock})`);
    }
    return new HistoryLog({
      kind: 'leasehold/history-log',
      stamps: new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT),
      blocks: Array.from({ length: blocks }, () => new SharedArrayBuffer(bytesPerBlock)),
    });
  }

  /** The same log, seen from another thread. */
  static attach(handle: HistoryLogHandle): HistoryLog {
    if (handle === null || typeof handle !== 'object' || handle.kind !== 'leasehold/history-log' || !Array.isArray(handle.blocks)) {
      throw new InvalidArgumentError(`Expected a handle from HistoryLog.share(), got ${handle === null ? 'null' : typeof handle}`);
    }
    return new HistoryLog(handle);
  }

  share(): HistoryLogHandle {
    return this.#handle;
  }

  get blocks(): number {
    return this.#handle.blocks.length;
  }

  /**
   * The recorder of block `block`, labelled thread `block` in the history:
   * one recorder per block at a time. `stamps` defaults to this log's shared
   * counter (one process); pass a shared clock of your own (e.g. `redisStamps`)
   * when several processes each record into a log of their own.
   */
  recorder(block: number, stamps: StampSource = this.#counter()): CallRecorder {
    if (!Number.isSafeInteger(block) || !(block >= 0 && block < this.blocks)) {
      throw new InvalidArgumentError(`Expected \`block\` to be an integer from 0 to ${this.blocks - 1}, got \`${String(block)}\``);
    }
    const writer = new BlockWriter(this.#handle.blocks[block]!);
    return new CallRecorder(block, stamps, (kind, seq, stamp, body) => writer.append(kind === 'invoked' ? INVOKED : RETURNED, seq, stamp, body));
  }

  /** The shared counter: each call takes the next number, in every thread of this process. */
  #counter(): StampSource {
    const stamps = this.#stamps;
    // The stamp is the order: an atomic add is one point in real time between the call's two ends.
    return { sync: true, next: () => Atomics.add(stamps, 0, 1) };
  }

  /**
   * Every call recorded so far, in invocation order; a call still without its
   * response is pending. Read it once the recorders are done (or dead).
   * Throws QueueFullError if a block ran out of room.
   */
  calls(): Call[] {
    const calls: Call[] = [];
    this.#handle.blocks.forEach((buffer, thread) => {
      const words = new Int32Array(buffer, 0, HEADER_WORDS);
      if (Atomics.load(words, OVERFLOWED) !== 0) {
        throw new QueueFullError(`Block ${thread} of the history log (${buffer.byteLength} bytes) ran out of room: some calls were not recorded. Create the log with a larger bytesPerBlock`);
      }
      calls.push(...readBlock(buffer, thread, Atomics.load(words, USED)));
    });
    return calls.sort((a, b) => a.inv - b.inv);
  }

  /** Empties the log for the next history (only while no one records). */
  clear(): void {
    Atomics.store(this.#stamps, 0, 0);
    for (const buffer of this.#handle.blocks) {
      const words = new Int32Array(buffer, 0, HEADER_WORDS);
      Atomics.store(words, OVERFLOWED, 0);
      Atomics.store(words, USED, 0);
    }
  }
}

/** Appends records to one block; only its recorder's thread writes it. */
class BlockWriter {
  readonly #words: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;

  constructor(buffer: SharedArrayBuffer) {
    this.#words = new Int32Array(buffer, 0, HEADER_WORDS);
    this.#bytes = new Uint8Array(buffer);
    this.#view = new DataView(buffer);
  }

  append(kind: number, seq: number, stamp: number, body: unknown): void {
    const json = encoder.encode(JSON.stringify(body));
    const length = RECORD_HEADER_BYTES + json.length;
    // Only this thread moves `used`; another thread's clear() happens between histories.
    const used = Atomics.load(this.#words, USED);
    const at = BLOCK_HEADER_BYTES + used;
    if (at + length > this.#bytes.length) {
      Atomics.store(this.#words, OVERFLOWED, 1);
      return;
    }
    this.#view.setUint32(at, length);
    this.#view.setUint8(at + 4, kind);
    this.#view.setUint32(at + 8, seq);
    this.#view.setFloat64(at + 12, stamp);
    this.#bytes.set(json, at + RECORD_HEADER_BYTES);
    // Publishes the record: a reader's Atomics.load of `used` sees all of it (pairs with the load in calls()).
    Atomics.store(this.#words, USED, used + Math.ceil(length / ALIGN) * ALIGN);
  }
}

function readBlock(buffer: SharedArrayBuffer, thread: number, used: number): Call[] {
  const view = new DataView(buffer);
  const bytes = new Uint8Array(buffer);
  const bySeq = new Map<number, Call>();
  for (let offset = 0; offset < used; ) {
    const at = BLOCK_HEADER_BYTES + offset;
    const length = view.getUint32(at);
    const kind = view.getUint8(at + 4);
    const seq = view.getUint32(at + 8);
    const stamp = view.getFloat64(at + 12);
    // slice() copies: TextDecoder refuses views of shared memory.
    const body: unknown = JSON.parse(decoder.decode(bytes.slice(at + RECORD_HEADER_BYTES, at + length)));
    if (kind === INVOKED) {
      bySeq.set(seq, { thread, call: body as CallArgs, inv: stamp, resp: Number.POSITIVE_INFINITY, result: { ok: false, code: NO_RESPONSE }, pending: true });
    } else {
      const call = bySeq.get(seq);
      if (call !== undefined) {
        call.resp = stamp;
        call.result = body as Result;
        delete call.pending;
      }
    }
    offset += Math.ceil(length / ALIGN) * ALIGN;
  }
  return [...bySeq.values()];
}
