import {
  ARENA_BUMP, ARENA_CLASSES, ARENA_FREE_HEADS, ARENA_START, BLOCK_CLASS, BLOCK_HEADER_BYTES, BLOCK_NEXT,
  SMALLEST_BLOCK_BYTES,
} from './layout.js';

/**
 * Bytes for the strings of jobs (type, payload, lastError) in one shared
 * buffer. Blocks come in power-of-two size classes, carved from a bump
 * pointer and recycled through one free list per class. Only the queue-lock
 * holder allocates or frees.
 *
 * A block's header names its class, so the arena can be walked from
 * ARENA_START to the bump pointer; `rebuild` uses that to re-derive every free
 * list from the set of blocks the slots still reference, which also reclaims
 * blocks a killed thread allocated but never attached to a job.
 */
export class Arena {
  readonly bytes: Buffer;
  readonly #words: Int32Array;
  readonly #header: Float64Array;

  constructor(buffer: SharedArrayBuffer, header: Float64Array) {
    this.bytes = Buffer.from(buffer);
    this.#words = new Int32Array(buffer, 0, Math.floor(buffer.byteLength / 4));
    this.#header = header;
  }

  /** The largest byte count one block can hold. */
  static capacityOf(arenaBytes: number): number {
    return blockBytes(classFor(arenaBytes - ARENA_START + 1) - 1) - BLOCK_HEADER_BYTES;
  }

  /** Offset of the data of a new block of at least `byteCount` bytes, or 0 if there is no room. */
  allocate(byteCount: number): number {
    const cls = classFor(byteCount + BLOCK_HEADER_BYTES);
    if (cls >= ARENA_CLASSES) return 0;
    const header = this.#header;
    const head = header[ARENA_FREE_HEADS + cls]!;
    if (head !== 0) {
      header[ARENA_FREE_HEADS + cls] = this.#words[(head >> 2) + BLOCK_NEXT]!;
      return head + BLOCK_HEADER_BYTES;
    }
    const at = header[ARENA_BUMP] || ARENA_START;
    const size = blockBytes(cls);
    if (at + size > this.bytes.length) return 0;
    // Write the header before moving the bump pointer: the walk in `rebuild` must never meet a block without one.
    this.#words[(at >> 2) + BLOCK_CLASS] = cls;
    header[ARENA_BUMP] = at + size;
    return at + BLOCK_HEADER_BYTES;
  }

  free(dataRef: number): void {
    if (dataRef <= 0) return;
    const block = dataRef - BLOCK_HEADER_BYTES;
    const cls = this.#words[(block >> 2) + BLOCK_CLASS]!;
    this.#words[(block >> 2) + BLOCK_NEXT] = this.#header[ARENA_FREE_HEADS + cls]!;
    this.#header[ARENA_FREE_HEADS + cls] = block;
  }

  write(dataRef: number, text: string): number {
    return this.bytes.write(text, dataRef, 'utf8');
  }

  read(dataRef: number, byteCount: number): string {
    return byteCount === 0 ? '' : this.bytes.toString('utf8', dataRef, dataRef + byteCount);
  }

  /** Re-derives every free list: a block is in use exactly when `inUse(dataRef)` says so. */
  rebuild(inUse: (dataRef: number) => boolean): void {
    const header = this.#header;
    for (let c = 0; c < ARENA_CLASSES; c++) header[ARENA_FREE_HEADS + c] = 0;
    const end = header[ARENA_BUMP]!;
    for (let at = ARENA_START; at < end; at += blockBytes(this.#words[(at >> 2) + BLOCK_CLASS]!)) {
      if (!inUse(at + BLOCK_HEADER_BYTES)) this.free(at + BLOCK_HEADER_BYTES);
    }
  }
}

function blockBytes(cls: number): number {
  return SMALLEST_BLOCK_BYTES * 2 ** cls;
}

/** The smallest size class whose blocks hold `bytes`. */
function classFor(bytes: number): number {
  return bytes <= SMALLEST_BLOCK_BYTES ? 0 : Math.ceil(Math.log2(bytes / SMALLEST_BLOCK_BYTES));
}
