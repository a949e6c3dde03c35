import { elementsIn, growDoubling } from '../memory/growth.js';
import {
  INITIAL_ARENA_BYTES, ARENA_BUMP, ARENA_FREE_COUNT, ARENA_FREE_HEAD, ARENA_FREED, ARENA_RUN_CHUNKS, ARENA_RUN_HEAD, CHUNK_BYTES, CHUNK_DATA_BYTES, CHUNK_NEXT_BYTES,
  COUNTED_BINARY, ERROR_LENGTH_BYTES, FIRST_CHUNK, RUN_MARK, RUN_MIN_CHUNKS,
} from '../memory/layout.js';


/** What `store` answers when the arena has too few free chunks for the string. */
export const NO_ROOM = -1;
/** What `#runData` answers for a chain. */
const NOT_A_RUN = -1;
/** What `#runData` answers for a run past the buffer: a lock-free reader's ref that raced an eviction's reuse (its re-check discards what it read). */
const PAST_BUFFER = -2;
/** Room for a counted chain's length, written over it once stored (see storeCounted); one byte per character. */
const LENGTH_ROOM = '\0'.repeat(ERROR_LENGTH_BYTES);
/**
 * A word view of `source` for copying it into chunks a word at a time, where
 * its bytes land on word boundaries (a chain's `lead` bytes a multiple of 4,
 * its start aligned); undefined otherwise, for a byte loop. Measured on
 * Node 20, a 1 MiB payload into 16,384 chunks: 0.33 ms by words, 0.83 ms by
 * one native copy per chunk (Uint8Array#set of a subarray), 1.3 ms by bytes.
 */
function wordsOf(source: Uint8Array, lead: number): Int32Array | undefined {
  if ((source.byteOffset & 3) !== 0 || (lead & 3) !== 0 || source.length < 4) return undefined;
  return new Int32Array(source.buffer, source.byteOffset, source.length >> 2);
}

/**
 * Buffer's own UTF-8 codec, which `toString('utf8', start, end)` and
 * `write(text, at, 'utf8')` reach after checking their arguments and looking
 * the encoding up: called directly, a 64-byte decode takes a third less time
 * (93 against 132 ns on Node 20), and every submit encodes its job, every
 * lease decodes its payload. Not in Node's typings.
 */
interface Utf8Buffer extends Buffer {
  utf8Slice(start: number, end: number): string;
  utf8Write(text: string, at: number): number;
}

/** Strings an exclusive queue keeps unencoded at most (see Arena#kept). */
const MAX_KEPT_STRINGS = 16_384;

/** Strings up to this long are encoded by a byte loop, longer ones natively (see #write). */
const BYTE_LOOP_CHARS = 16;

/**
 * Bytes for the strings of jobs (type + payload, lastError) in one shared
 * buffer of fixed-size chunks. A short string is a chain of chunks: each starts
 * with the index of the next (0 ends the chain), then up to CHUNK_DATA_BYTES
 * of UTF-8, or of raw bytes for a binary payload or result (`storeBytes`,
 * `storeCountedBytes`; the record or the chain's length word says which).
 * A string of RUN_MIN_CHUNKS chunks or more is a run when a free run fits it:
 * consecutive chunks holding its bytes in one span (see RUN_MARK in
 * layout.ts), written with one native copy and read in place, so a binary
 * payload in a run is handed to its lease as a view (`viewBytes`, I29), not a copy.
 *
 * A store never fails while enough chunks are free, whatever their places:
 * a long string that finds no free run wide enough, even after the free
 * lists are coalesced (`#coalesce`), is stored as a chain (and its lease
 * then gets a copy). So whenever the free chunks, plus those of jobs that
 * may be evicted, number enough, a string fits; and a long string is a run
 * whenever the free chunks hold a stretch of its length. Only the queue-lock
 * holder allocates or frees.
 *
 * Free chunks lie on two lists, single chunks (ARENA_FREE_HEAD) and runs
 * (ARENA_RUN_HEAD, each with its length); chunks never used lie beyond
 * ARENA_BUMP. A chain takes single free chunks first, then chunks off the end
 * of a free run, then fresh ones; a run takes the first free run long enough,
 * else fresh chunks, else coalesces and looks again. After a crash, `rebuild`
 * re-derives both lists from the chains the slots still reference, which also
 * reclaims chunks a killed thread took and never attached.
 */
export class Arena {
  readonly #buffer: SharedArrayBuffer;
  // This thread's views: fixed-length, re-made when a chunk past them is met (see growth.ts and #reach).
  #bytes: Utf8Buffer;
  #u8: Uint8Array;
  #next: Int32Array;
  /** Chunks this thread's views cover. */
  #viewChunks = 0;
  readonly #header: Float64Array;
  /** Chunks the arena may grow to. */
  readonly #chunks: number;
  #scratch = Buffer.alloc(4096);
  /**
   * While the queue is exclusive (see Exclusive queues in layout.ts), the
   * strings that fit one chunk, kept by chunk as the caller gave them
   * instead of encoded: no other thread can read the arena yet, and an
   * encode and a decode cost about 270 ns a job on Node 20 (two native
   * calls), a quarter of a single-thread job's whole cycle. The chunk is
   * taken all the same, so room is counted alike. At most MAX_KEPT_STRINGS
   * at a time: a deep backlog goes to shared memory, not to the JavaScript
   * heap, which every full collection marks. Undefined while the queue is
   * not exclusive: before `keepStrings`, and once `publish` has encoded them
   * all, as the queue is shared. A kept chunk's link is not written either:
   * every walk of a chain is bounded by its byte count, and `publish` ends it.
   */
  #kept: (string | undefined)[] | undefined = undefined;
  #keptCount = 0;

  /** Over `buffer`: growable, it grows as chunks past ARENA_BUMP are taken, up to its maxByteLength. */
  constructor(buffer: SharedArrayBuffer, header: Float64Array) {
    this.#buffer = buffer;
    this.#header = header;
    this.#chunks = Math.floor(buffer.maxByteLength / CHUNK_BYTES);
    [this.#bytes, this.#u8, this.#next] = this.#views();
  }

  /** Views over the whole chunks the buffer holds now. */
  #views(): [Utf8Buffer, Uint8Array, Int32Array] {
    const chunks = (this.#viewChunks = elementsIn(this.#buffer, CHUNK_BYTES));
    const bytes = chunks * CHUNK_BYTES;
    return [Buffer.from(this.#buffer, 0, bytes) as Utf8Buffer, new Uint8Array(this.#buffer, 0, bytes), new Int32Array(this.#buffer, 0, bytes >> 2)];
  }

  /**
   * Makes this thread's views cover chunk `chunk`: re-made over the buffer as
   * it is now, which another thread's `#take` grew before it published the
   * chunk. False if the buffer does not reach it either: a lock-free reader
   * read a ref that raced an eviction's reuse (its re-check of the slot's
   * word discards what it read).
   */
  #reach(chunk: number): boolean {
    if (chunk < this.#viewChunks) return true;
    [this.#bytes, this.#u8, this.#next] = this.#views();
    return chunk < this.#viewChunks;
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
   * Stores `first` and then `second` as one chain of `byteCount` bytes;
   * returns its first chunk, 0 for no bytes at all, or NO_ROOM if there are
   * not enough free chunks (then nothing was taken).
   */
  store(byteCount: number, first: string, second = ''): number {
    return this.#store(byteCount, first, second, second === '');
  }

  /** `store`; with `mayKeep`, a string of one chunk may be kept rather than encoded (see #kept). */
  #store(byteCount: number, first: string, second: string, mayKeep: boolean): number {
    const count = Arena.chunksFor(byteCount);
    if (count === 0) return 0;
    if (count > this.freeChunks) return NO_ROOM;
    if (count === 1) {
      // The common case, a short job, is kept (exclusive) or encoded straight into its chunk.
      const chunk = this.#take();
      // Kept, the chunk is not even touched (a fresh page stays unmapped).
      if (mayKeep && this.#kept !== undefined && this.#keptCount < MAX_KEPT_STRINGS) {
        this.#kept[chunk] = first;
        this.#keptCount++;
        return chunk;
      }
      this.#next[(chunk * CHUNK_BYTES) >> 2] = 0;
      const at = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES;
      const written = this.#write(first, at);
      if (second !== '') this.#write(second, at + written);
      return chunk;
    }
    if (count >= RUN_MIN_CHUNKS) {
      const head = this.#takeRun(count);
      if (head !== 0) {
        // Encoded straight into the run: no scratch copy.
        const at = head * CHUNK_BYTES + CHUNK_NEXT_BYTES;
        const written = this.#bytes.utf8Write(first, at);
        if (second !== '') this.#bytes.utf8Write(second, at + written);
        return head;
      }
    }
    const source = this.#scratchOf(byteCount);
    source.write(second, source.write(first, 0, 'utf8'), 'utf8');
    return this.#storeChain(source, byteCount, count, 0);
  }

  /**
   * Stores `bytes` as they are (a binary payload: no text encoding, never
   * kept, so any bytes survive, valid UTF-8 or not); returns its first chunk,
   * 0 for no bytes, or NO_ROOM as `store` does. The one copy into shared memory.
   */
  storeBytes(bytes: Uint8Array): number {
    const count = Arena.chunksFor(bytes.length);
    if (count === 0) return 0;
    if (count > this.freeChunks) return NO_ROOM;
    return this.#storeRun(bytes, count, 0) || this.#storeChain(bytes, bytes.length, count, 0);
  }

  /**
   * Takes a run for a payload of `byteCount` bytes that its producer writes
   * in place (a reservation, I30), its bytes left as they are; returns its
   * first chunk, or 0 if it would be shorter than RUN_MIN_CHUNKS or no free
   * stretch fits it (the caller then hands out a copy's buffer instead).
   * `viewBytes(head, 0, byteCount)` is the producer's view of it.
   */
  reserveRun(byteCount: number): number {
    const count = Arena.chunksFor(byteCount);
    if (count < RUN_MIN_CHUNKS || count > this.freeChunks) return 0;
    return this.#takeRun(count);
  }

  /**
   * Stores a binary result as a counted chain: its length, marked
   * COUNTED_BINARY, then the bytes as given. Its first chunk, or NO_ROOM.
   */
  storeCountedBytes(bytes: Uint8Array): number {
    const count = Arena.chunksFor(ERROR_LENGTH_BYTES + bytes.length);
    if (count > this.freeChunks) return NO_ROOM;
    const first = this.#storeRun(bytes, count, ERROR_LENGTH_BYTES) || this.#storeChain(bytes, ERROR_LENGTH_BYTES + bytes.length, count, ERROR_LENGTH_BYTES);
    this.#next[(first * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2] = bytes.length | COUNTED_BINARY;
    return first;
  }

  /**
   * Copies `source` into a new run of `count` chunks, after `lead` bytes left
   * for the caller, with one native copy (memcpy speed: 1 MiB in about
   * 0.1 ms where the word loop of a chain takes 0.33); its first chunk, or 0
   * if it is short (under RUN_MIN_CHUNKS) or no free run fits it: then the caller stores a chain.
   */
  #storeRun(source: Uint8Array, count: number, lead: number): number {
    if (count < RUN_MIN_CHUNKS) return 0;
    const head = this.#takeRun(count);
    // After the take, which may have grown the arena and re-made the views.
    if (head !== 0) this.#u8.set(source, head * CHUNK_BYTES + CHUNK_NEXT_BYTES + lead);
    return head;
  }

  /**
   * Copies `source` into a new chain of `count` chunks (there is room) that
   * holds `byteCount` bytes: `lead` bytes left for the caller (a counted
   * chain's length), then the source's. Returns its first chunk.
   */
  #storeChain(source: Uint8Array, byteCount: number, count: number, lead: number): number {
    const sourceWords = wordsOf(source, lead);
    let head = 0;
    let previous = 0;
    for (let i = 0; i < count; i++) {
      const chunk = this.#take();
      // After the take, which may have grown the arena and re-made the views.
      const bytes = this.#u8;
      const words = this.#next;
      if (previous === 0) head = chunk;
      else words[(previous * CHUNK_BYTES) >> 2] = chunk;
      words[(chunk * CHUNK_BYTES) >> 2] = 0;
      const at = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES;
      const start = i * CHUNK_DATA_BYTES;
      const end = Math.min(byteCount, start + CHUNK_DATA_BYTES);
      let k = start < lead ? lead : start;
      // Whole words while both ends are aligned (see wordsOf), then the last few bytes one by one.
      if (sourceWords !== undefined) {
        for (let to = (at + k - start) >> 2, from = (k - lead) >> 2, last = from + ((end - k) >> 2); from < last; ) words[to++] = sourceWords[from++]!;
        k += (end - k) & ~3;
      }
      for (; k < end; k++) bytes[at + k - start] = source[k - lead]!;
      previous = chunk;
    }
    return head;
  }

  /**
   * Stores an error text of `byteCount` bytes as a chain that starts with
   * that length (ERROR_LENGTH_BYTES), so that a record needs no field for
   * it; returns its first chunk, or -1 as `store` does.
   */
  storeCounted(byteCount: number, text: string): number {
    // Never kept: its length is written into its first bytes.
    const first = this.#store(ERROR_LENGTH_BYTES + byteCount, LENGTH_ROOM, text, false);
    if (first > 0) this.#next[(first * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2] = byteCount;
    return first;
  }

  /** The length a chain from `storeCounted` or `storeCountedBytes` starts with (without its COUNTED_BINARY mark). */
  countedBytes(first: number): number {
    if (!this.#reach(first)) return 0;
    return this.#next[(first * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2]! & ~COUNTED_BINARY;
  }

  /** Whether a counted chain holds bytes (from `storeCountedBytes`), not text. */
  countedBinary(first: number): boolean {
    if (!this.#reach(first)) return false;
    return (this.#next[(first * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2]! & COUNTED_BINARY) !== 0;
  }

  /** A copy of the bytes of a chain from `storeCountedBytes`. */
  readCountedBytes(first: number): Uint8Array {
    const byteCount = this.countedBytes(first);
    // More than the arena holds: a racing reader's (see readCounted).
    if (!(byteCount >= 0 && byteCount <= this.#chunks * CHUNK_BYTES)) return new Uint8Array(0);
    return this.readBytes(first, ERROR_LENGTH_BYTES, byteCount);
  }

  /** The text of a chain from `storeCounted`. */
  readCounted(first: number): string {
    const byteCount = this.countedBytes(first);
    // More than the arena holds: a lock-free reader raced an eviction that reused the chain; its re-check of the slot's word discards this.
    if (!(byteCount >= 0 && byteCount <= this.#chunks * CHUNK_BYTES)) return '';
    return this.read(first, ERROR_LENGTH_BYTES, byteCount);
  }

  /**
   * Where the bytes of the string at `first` start, if it is a run whose
   * first `byteCount` bytes this thread's views reach (re-made to reach
   * them); NOT_A_RUN for a chain; PAST_BUFFER for a ref past the buffer. Not
   * for a kept string, whose NEXT word is not written (see #kept).
   */
  #runData(first: number, byteCount: number): number {
    if (!this.#reach(first)) return PAST_BUFFER;
    if (this.#next[(first * CHUNK_BYTES) >> 2] !== RUN_MARK) return NOT_A_RUN;
    const at = first * CHUNK_BYTES + CHUNK_NEXT_BYTES;
    return this.#reach(Math.ceil((at + byteCount) / CHUNK_BYTES) - 1) ? at : PAST_BUFFER;
  }

  /**
   * The bytes `readBytes` reads, as a view onto the arena's shared memory
   * when the string is a run: no copy. Valid for as long as the string's
   * chunks are not freed: for a lease's payload, while that lease is live
   * (I29); whoever keeps the bytes longer copies them (`slice()`). A chain's
   * (a payload stored when no free run fitted it) is a copy, as `readBytes`.
   * The view is fixed-length over the growable buffer: a growth leaves it
   * valid, a SharedArrayBuffer never shrinks.
   */
  viewBytes(first: number, skip: number, byteCount: number): Uint8Array {
    if (byteCount === 0 || this.#kept?.[first] !== undefined) return this.readBytes(first, skip, byteCount);
    const run = this.#runData(first, skip + byteCount);
    if (run >= 0) return new Uint8Array(this.#buffer, run + skip, byteCount);
    return this.readBytes(first, skip, byteCount);
  }

  /**
   * A copy of `byteCount` bytes of the string at `first`, starting `skip`
   * bytes in (a binary payload or result): one native copy from a run, a walk
   * of a chain's chunks. A copy, not a view: chunks are reused once their job
   * is evicted (see `viewBytes` for a lease's). A ref past the buffer (a
   * racing reader's, which its re-check discards) reads as no bytes.
   */
  readBytes(first: number, skip: number, byteCount: number): Uint8Array {
    if (byteCount === 0) return new Uint8Array(0);
    // A kept string (an exclusive queue's text chain of one chunk, which an undo saves as bytes): its UTF-8.
    const kept = this.#kept?.[first];
    if (kept !== undefined) return new Uint8Array(Buffer.from(kept).subarray(skip, skip + byteCount));
    const run = this.#runData(first, skip + byteCount);
    if (run === PAST_BUFFER) return new Uint8Array(0);
    if (run !== NOT_A_RUN) {
      // One native copy into a buffer of its own (not shared, not zero-filled first): measured on Node 20 for
      // 1 MiB, 0.06 to 0.9 ms, where `slice()` of the shared array took 3.5 to 5 ms.
      const copy = new Uint8Array(Buffer.allocUnsafeSlow(byteCount).buffer, 0, byteCount);
      copy.set(this.#u8.subarray(run + skip, run + skip + byteCount));
      return copy;
    }
    // Not zero-filled (every byte is written below): zeroing a megabyte costs as much as copying it.
    const out = new Uint8Array(Buffer.allocUnsafeSlow(byteCount).buffer, 0, byteCount);
    // Whole words while both ends are aligned: chunk data starts on a word (CHUNK_BYTES and CHUNK_NEXT_BYTES are multiples of 4).
    const outWords = (skip & 3) === 0 ? new Int32Array(out.buffer, 0, byteCount >> 2) : undefined;
    let chunk = first;
    for (; skip >= CHUNK_DATA_BYTES; skip -= CHUNK_DATA_BYTES) chunk = this.#nextOf(chunk);
    if (!this.#reach(chunk)) return new Uint8Array(0);
    let copied = 0;
    for (let at = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES + skip, end = at - skip + CHUNK_DATA_BYTES; ; ) {
      const take = Math.min(end - at, byteCount - copied);
      // The views may have been re-made to reach this chunk.
      const bytes = this.#u8;
      let k = 0;
      if (outWords !== undefined) {
        const words = this.#next;
        for (let to = copied >> 2, from = at >> 2, last = to + (take >> 2); to < last; ) outWords[to++] = words[from++]!;
        k = take & ~3;
      }
      for (; k < take; k++) out[copied + k] = bytes[at + k]!;
      copied += take;
      if (copied === byteCount) return out;
      chunk = this.#nextOf(chunk);
      if (!this.#reach(chunk)) return new Uint8Array(0);
      at = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES;
      end = at + CHUNK_DATA_BYTES;
    }
  }

  /** Decodes `byteCount` bytes of the chain at `first`, starting `skip` bytes in. */
  read(first: number, skip: number, byteCount: number): string {
    if (byteCount === 0) return '';
    // A kept string is a whole store of one chunk: read from its start, for its length.
    if (this.#kept !== undefined) {
      const kept = this.#kept[first];
      if (kept !== undefined) return kept;
    }
    // The common case, bytes within the first chunk's data (where a run's first bytes lie too), decodes in place.
    if (skip + byteCount <= CHUNK_DATA_BYTES) {
      // A ref past the buffer: a racing reader's, which its re-check discards.
      if (!this.#reach(first)) return '';
      const at = first * CHUNK_BYTES + CHUNK_NEXT_BYTES + skip;
      return this.#bytes.utf8Slice(at, at + byteCount);
    }
    const run = this.#runData(first, skip + byteCount);
    if (run === PAST_BUFFER) return '';
    // A run decodes in place, however long.
    if (run !== NOT_A_RUN) return this.#bytes.utf8Slice(run + skip, run + skip + byteCount);
    let chunk = first;
    for (; skip >= CHUNK_DATA_BYTES; skip -= CHUNK_DATA_BYTES) chunk = this.#nextOf(chunk);
    if (!this.#reach(chunk)) return '';
    const start = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES + skip;
    const out = this.#scratchOf(byteCount);
    let bytes = this.#u8;
    let copied = 0;
    for (let at = start, end = start - skip + CHUNK_DATA_BYTES; ; ) {
      while (at < end && copied < byteCount) out[copied++] = bytes[at++]!;
      if (copied === byteCount) break;
      chunk = this.#nextOf(chunk);
      if (!this.#reach(chunk)) return '';
      // The views may have been re-made to reach it.
      bytes = this.#u8;
      at = chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES;
      end = at + CHUNK_DATA_BYTES;
    }
    return out.toString('utf8', 0, byteCount);
  }

  /**
   * Returns the chunks of the string at `first`, which holds `byteCount`
   * bytes, to the free lists: a run whole to the runs' list, a chain's chunks
   * one by one to the single chunks'. The count bounds a chain's walk: a
   * chain is never trusted to end. From here on its chunks may be reused,
   * and a view of them (I29) see other bytes.
   */
  free(first: number, byteCount: number): void {
    const header = this.#header;
    const count = Arena.chunksFor(byteCount);
    if (count === 0 || first <= 0) return;
    header[ARENA_FREED]! += count;
    if (this.#kept !== undefined && this.#kept[first] !== undefined) {
      // A kept string is one chunk, its NEXT word never written: not read for a run's mark.
      this.#kept[first] = undefined;
      this.#keptCount--;
      this.#pushChunk(first);
      return;
    }
    // Only a string that long may be a run (one of fewer chunks has a chain's first chunk).
    if (count >= RUN_MIN_CHUNKS && this.#runData(first, 0) >= 0) {
      this.#pushRun(first, count);
      return;
    }
    let chunk = first;
    for (let left = count; left > 0 && chunk > 0; left--) {
      const next = this.#nextOf(chunk);
      this.#pushChunk(chunk);
      chunk = next;
    }
  }

  /** Puts one chunk on the single chunks' free list. */
  #pushChunk(chunk: number): void {
    const header = this.#header;
    if (!this.#reach(chunk)) return;
    this.#next[(chunk * CHUNK_BYTES) >> 2] = header[ARENA_FREE_HEAD]!;
    header[ARENA_FREE_HEAD] = chunk;
    header[ARENA_FREE_COUNT]!++;
  }

  /** Puts the `count` chunks from `head` on the free runs' list, as one run. */
  #pushRun(head: number, count: number): void {
    const header = this.#header;
    if (!this.#reach(head)) return;
    this.#next[(head * CHUNK_BYTES) >> 2] = header[ARENA_RUN_HEAD]!;
    this.#next[(head * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2] = count;
    header[ARENA_RUN_HEAD] = head;
    header[ARENA_FREE_COUNT]! += count;
    header[ARENA_RUN_CHUNKS]! += count;
  }

  /**
   * Re-derives the free lists: every chunk of one of the `chains` (pairs of
   * first chunk and byte count; a run's chunks are consecutive) is used,
   * every other chunk below the bump is free, laid out as `#coalesce` does.
   */
  rebuild(chains: readonly number[]): void {
    const free = new Uint8Array(this.#bump()).fill(1, FIRST_CHUNK);
    for (let i = 0; i < chains.length; i += 2) {
      const first = chains[i]!;
      const count = Arena.chunksFor(chains[i + 1]!);
      if (count >= RUN_MIN_CHUNKS && this.#runData(first, 0) >= 0) {
        free.fill(0, first, Math.min(first + count, free.length));
        continue;
      }
      let chunk = first;
      for (let left = count; left > 0 && chunk > 0 && chunk < free.length; left--) {
        free[chunk] = 0;
        chunk = this.#nextOf(chunk);
      }
    }
    this.#layFree(free);
  }

  /**
   * Makes the free lists anew from `free` (1 for each free chunk below the
   * bump): the bump comes down over free chunks at its end; each stretch of
   * free chunks at least RUN_MIN_CHUNKS long is one free run, each shorter
   * one single chunks. So adjacent free runs and chunks are merged, and the
   * lists hold every stretch a run could take.
   */
  #layFree(free: Uint8Array): void {
    const header = this.#header;
    header[ARENA_FREE_HEAD] = 0;
    header[ARENA_FREE_COUNT] = 0;
    header[ARENA_RUN_HEAD] = 0;
    header[ARENA_RUN_CHUNKS] = 0;
    header[ARENA_FREED] = 0;
    let end = free.length;
    while (end > FIRST_CHUNK && free[end - 1] === 1) end--;
    header[ARENA_BUMP] = end;
    // Runs pushed from the end down: the list then starts with the lowest, which the first fit takes.
    for (let to = end; to > FIRST_CHUNK; ) {
      const stop = free.lastIndexOf(1, to - 1);
      if (stop < FIRST_CHUNK) break;
      let start = free.lastIndexOf(0, stop) + 1;
      if (start < FIRST_CHUNK) start = FIRST_CHUNK;
      const length = stop + 1 - start;
      if (length >= RUN_MIN_CHUNKS) this.#pushRun(start, length);
      else for (let chunk = stop; chunk >= start; chunk--) this.#pushChunk(chunk);
      to = start;
    }
  }

  /**
   * Merges the free lists: every free chunk below the bump is found (walking
   * both lists) and the lists laid anew (`#layFree`). O(chunks below the
   * bump); made only when a run found no room and chunks were freed since the
   * last merge (ARENA_FREED), so a queue whose free chunks hold no stretch
   * long enough does not merge at every long store.
   */
  #coalesce(): void {
    const header = this.#header;
    const free = new Uint8Array(this.#bump());
    let chunk = header[ARENA_FREE_HEAD]!;
    for (let left = header[ARENA_FREE_COUNT]! - header[ARENA_RUN_CHUNKS]!; left > 0 && chunk > 0 && chunk < free.length; left--) {
      free[chunk] = 1;
      chunk = this.#nextOf(chunk);
    }
    for (let run = header[ARENA_RUN_HEAD]!; run > 0 && run < free.length; ) {
      free.fill(1, run, Math.min(run + this.#runLength(run), free.length));
      run = this.#nextOf(run);
    }
    this.#layFree(free);
  }

  /** A free run's length, in chunks. */
  #runLength(run: number): number {
    return this.#reach(run) ? this.#next[(run * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2]! : 0;
  }

  /** From now on strings of one chunk are kept, not encoded (see #kept): the queue is exclusive. */
  keepStrings(): void {
    this.#kept ??= [];
  }

  /** Encodes every kept string into its chunk, and keeps none from now on: the queue is about to be shared. */
  publish(): void {
    const kept = this.#kept;
    this.#kept = undefined;
    this.#keptCount = 0;
    if (kept === undefined) return;
    kept.forEach((text, chunk) => {
      if (text === undefined) return;
      this.#next[(chunk * CHUNK_BYTES) >> 2] = 0;
      this.#write(text, chunk * CHUNK_BYTES + CHUNK_NEXT_BYTES);
    });
  }

  /** A chunk for a chain (there is room): a single free chunk, else the last chunk of the first free run, else a fresh one. */
  #take(): number {
    const header = this.#header;
    const head = header[ARENA_FREE_HEAD]!;
    if (head !== 0) {
      header[ARENA_FREE_HEAD] = this.#nextOf(head);
      header[ARENA_FREE_COUNT]!--;
      return head;
    }
    const run = header[ARENA_RUN_HEAD]!;
    if (run !== 0) {
      // Off the run's end: the run keeps its first chunk, where its link and length are.
      const length = this.#runLength(run);
      header[ARENA_FREE_COUNT]!--;
      header[ARENA_RUN_CHUNKS]!--;
      if (length > 1) {
        this.#next[(run * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2] = length - 1;
        // Below the bump, so inside the buffer; the caller writes it through the views.
        this.#reach(run + length - 1);
        return run + length - 1;
      }
      header[ARENA_RUN_HEAD] = this.#nextOf(run);
      return run;
    }
    const chunk = this.#bump();
    // The bytes first, then the bump that hands the chunk out (readers find it only through a ref written after).
    if (chunk >= this.#viewChunks) this.#grow(chunk + 1);
    header[ARENA_BUMP] = chunk + 1;
    return chunk;
  }

  /**
   * `count` consecutive chunks for a run, its first marked RUN_MARK; 0 if
   * there are none: the first free run long enough (its last `count` chunks),
   * else fresh chunks past the bump, else the same after coalescing the free
   * lists, if chunks were freed since they last were.
   */
  #takeRun(count: number): number {
    let head = this.#fitRun(count) || this.#freshRun(count);
    if (head === 0 && this.#header[ARENA_FREED]! > 0) {
      this.#coalesce();
      head = this.#fitRun(count) || this.#freshRun(count);
    }
    if (head !== 0) this.#next[(head * CHUNK_BYTES) >> 2] = RUN_MARK;
    return head;
  }

  /** First fit on the free runs' list: the last `count` chunks of the first run that long, or 0. */
  #fitRun(count: number): number {
    const header = this.#header;
    let previous = 0;
    for (let run = header[ARENA_RUN_HEAD]!; run > 0; ) {
      const length = this.#runLength(run);
      const link = this.#nextOf(run);
      if (length >= count) {
        header[ARENA_FREE_COUNT]! -= count;
        header[ARENA_RUN_CHUNKS]! -= count;
        // The views reach the run's end: it lies below the bump, inside the buffer.
        this.#reach(run + length - 1);
        if (length > count) {
          this.#next[(run * CHUNK_BYTES + CHUNK_NEXT_BYTES) >> 2] = length - count;
          return run + length - count;
        }
        if (previous === 0) header[ARENA_RUN_HEAD] = link;
        else this.#next[(previous * CHUNK_BYTES) >> 2] = link;
        return run;
      }
      previous = run;
      run = link;
    }
    return 0;
  }

  /** `count` fresh chunks past the bump (the buffer grown first, as #take's), or 0 if the arena cannot grow to them. */
  #freshRun(count: number): number {
    const first = this.#bump();
    if (first + count > this.#chunks) return 0;
    if (first + count > this.#viewChunks) this.#grow(first + count);
    this.#header[ARENA_BUMP] = first + count;
    return first;
  }

  /** Grows the buffer to hold `chunks` chunks (doubling, at least INITIAL_ARENA_BYTES) and re-makes this thread's views. */
  #grow(chunks: number): void {
    growDoubling(this.#buffer, chunks * CHUNK_BYTES, INITIAL_ARENA_BYTES);
    [this.#bytes, this.#u8, this.#next] = this.#views();
  }

  #bump(): number {
    return this.#header[ARENA_BUMP]! || FIRST_CHUNK;
  }

  #nextOf(chunk: number): number {
    if (!this.#reach(chunk)) return 0;
    return this.#next[(chunk * CHUNK_BYTES) >> 2]!;
  }

  /** Writes `text` as UTF-8 at byte `at`; returns the bytes written. */
  #write(text: string, at: number): number {
    const bytes = this.#u8;
    // Very short ASCII, byte by byte: cheaper than a native call (measured on Node 20: a byte store to
    // shared memory costs a few nanoseconds, so from about 20 bytes on the native encoder wins).
    if (text.length <= BYTE_LOOP_CHARS) {
      let i = 0;
      for (; i < text.length; i++) {
        const code = text.charCodeAt(i);
        if (code >= 0x80) break;
        bytes[at + i] = code;
      }
      if (i === text.length) return i;
    }
    return this.#bytes.utf8Write(text, at);
  }

  #scratchOf(byteCount: number): Buffer {
    if (this.#scratch.length < byteCount) this.#scratch = Buffer.alloc(2 ** Math.ceil(Math.log2(byteCount)));
    return this.#scratch;
  }
}
