import {
  ARENA_BUMP, ARENA_FREE_COUNT, ARENA_FREE_HEAD, CHUNK_BYTES, CHUNK_DATA_BYTES, CHUNK_NEXT_BYTES, FIRST_CHUNK,
} from './layout.js';

/**
 * Bytes for the strings of jobs (type + payload, lastError) in one shared
 * buffer of fixed-size chunks. A string is a chain of chunks: each starts
 * with the index of the next (0 ends the chain), then up to CHUNK_DATA_BYTES
 * of UTF-8. Any free chunk serves any string, so the arena never fragments:
 * whenever the free chunks, plus those of jobs that may be evicted, number
 * enough, a string fits. Only the queue-lock holder allocates or frees.
 *
 * Free chunks form one list; chunks never used lie beyond ARENA_BUMP. After a
 * crash, `rebuild` re-derives the free list from the chains the slots still
 * reference, which also reclaims chunks a killed thread took and never attached.
 */
export class Arena {
  readonly #bytes: Buffer;
  readonly #next: Int32Array;
  readonly #header: Float64Array;
  readonly #chunks: number;
  #scratch = Buffer.alloc(4096);

  constructor(buffer: SharedArrayBuffer, header: Float64Array) {
    this.#bytes = Buffer.from(buffer);
    this.#next = new Int32Array(buffer);
    this.#header = header;
    this.#chunks = Math.floor(buffer.byteLength / CHUNK_BYTES);
  }

  /** Chunks a string of `byteCount` bytes takes (none for the empty string). */
  static chunksFor(byteCount: number): number {
    return Math.ceil(byteCount / CHUNK_DATA_BYTES);
  }

  /** Chunks free now, counting those never used. */
  get freeChunks(): number {
    return this.#header[ARENA_FREE_COUNT]! + this.#chunks - this.#bump();
  }

  /**
   * Stores `texts` one after another as one chain; returns its first chunk,
   * 0 for no bytes at all, or -1 if there are not enough free chunks (then
   * nothing was taken).
   */
  store(byteCount: number, ...texts: string[]): number {
    const count = Arena.chunksFor(byteCount);
    if (count === 0) return 0;
    if (count > this.freeChunks) return -1;
    const source = this.#encode(byteCount, texts);
    let first = 0;
    let previous = 0;
    for (let i = 0; i < count; i++) {
      const chunk = this.#take();
      if (previous === 0) first = chunk;
      else this.#next[(previous * CHUNK_BYTES) >> 2] = chunk;
      this.#next[(chunk * CHUNK_BYTES) >> 2] = 0;
      const start = i * CHUNK_DATA_BYTES;
      source.copy(this.#bytes, chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES, start, Math.min(byteCount, start + CHUNK_DATA_BYTES));
      previous = chunk;
    }
    return first;
  }

  /** Decodes `byteCount` bytes of the chain at `first`, starting `skip` bytes in. */
  read(first: number, skip: number, byteCount: number): string {
    if (byteCount === 0) return '';
    let chunk = first;
    for (; skip >= CHUNK_DATA_BYTES; skip -= CHUNK_DATA_BYTES) chunk = this.#nextOf(chunk);
    const start = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES + skip;
    // The common case, a string within one chunk, decodes in place.
    if (skip + byteCount <= CHUNK_DATA_BYTES) return this.#bytes.toString('utf8', start, start + byteCount);
    const out = this.#scratchOf(byteCount);
    let copied = this.#bytes.copy(out, 0, start, start - skip + CHUNK_DATA_BYTES);
    while (copied < byteCount) {
      chunk = this.#nextOf(chunk);
      const at = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES;
      copied += this.#bytes.copy(out, copied, at, at + Math.min(CHUNK_DATA_BYTES, byteCount - copied));
    }
    return out.toString('utf8', 0, byteCount);
  }

  /**
   * Returns the chunks of the chain at `first`, which holds `byteCount` bytes,
   * to the free list. The count bounds the walk: a chain is never trusted to end.
   */
  free(first: number, byteCount: number): void {
    const header = this.#header;
    let chunk = first;
    for (let left = Arena.chunksFor(byteCount); left > 0 && chunk > 0; left--) {
      const next = this.#nextOf(chunk);
      this.#next[(chunk * CHUNK_BYTES) >> 2] = header[ARENA_FREE_HEAD]!;
      header[ARENA_FREE_HEAD] = chunk;
      header[ARENA_FREE_COUNT]!++;
      chunk = next;
    }
  }

  /**
   * Re-derives the free list: every chunk on one of the `chains` (pairs of
   * first chunk and byte count) is used, every other chunk below the bump is free.
   */
  rebuild(chains: readonly number[]): void {
    const used = new Uint8Array(this.#bump());
    for (let i = 0; i < chains.length; i += 2) {
      let chunk = chains[i]!;
      for (let left = Arena.chunksFor(chains[i + 1]!); left > 0 && chunk > 0 && chunk < used.length; left--) {
        used[chunk] = 1;
        chunk = this.#nextOf(chunk);
      }
    }
    const header = this.#header;
    header[ARENA_FREE_HEAD] = 0;
    header[ARENA_FREE_COUNT] = 0;
    for (let chunk = FIRST_CHUNK; chunk < used.length; chunk++) if (used[chunk] === 0) this.free(chunk, 1);
  }

  #take(): number {
    const header = this.#header;
    const head = header[ARENA_FREE_HEAD]!;
    if (head !== 0) {
      header[ARENA_FREE_HEAD] = this.#nextOf(head);
      header[ARENA_FREE_COUNT]!--;
      return head;
    }
    const chunk = this.#bump();
    header[ARENA_BUMP] = chunk + 1;
    return chunk;
  }

  #bump(): number {
    return this.#header[ARENA_BUMP]! || FIRST_CHUNK;
  }

  #nextOf(chunk: number): number {
    return this.#next[(chunk * CHUNK_BYTES) >> 2]!;
  }

  #encode(byteCount: number, texts: string[]): Buffer {
    const out = this.#scratchOf(byteCount);
    let at = 0;
    for (const text of texts) at += out.write(text, at, 'utf8');
    return out;
  }

  #scratchOf(byteCount: number): Buffer {
    if (this.#scratch.length < byteCount) this.#scratch = Buffer.alloc(2 ** Math.ceil(Math.log2(byteCount)));
    return this.#scratch;
  }
}
