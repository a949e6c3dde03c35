import { describe, expect, it } from 'vitest';
import { Arena } from '../../dist/shm/tables/arena.js';
import { CHUNK_BYTES, CHUNK_DATA_BYTES, FIRST_CHUNK, HEADER_FIELDS, INITIAL_ARENA_BYTES, RUN_MIN_CHUNKS } from '../../dist/shm/memory/layout.js';

/**
 * The payload arena (src/shm/tables/arena.ts), through its own API: chains of
 * fixed-size chunks in a growable buffer, grown as chunks past the bump are
 * taken, read by other views of the same buffer (as another thread's) after
 * the growth. Imports the built table from dist/shm, the core's documented
 * internal seam for its own tests.
 */
function arenaBuffer(maxBytes: number): SharedArrayBuffer {
  return new SharedArrayBuffer(INITIAL_ARENA_BYTES, { maxByteLength: maxBytes });
}

function text(i: number, bytes: number): string {
  return `${i}:`.padEnd(bytes, String.fromCharCode(97 + (i % 26)));
}

describe('payload arena', () => {
  it('reads back what it stored, in one chunk and over many', () => {
    const arena = new Arena(arenaBuffer(4 * INITIAL_ARENA_BYTES), new Float64Array(HEADER_FIELDS));
    const short = arena.store(5, 'hello');
    const long = text(1, 10 * CHUNK_DATA_BYTES + 3);
    const chain = arena.store(Buffer.byteLength(long), long);
    const counted = arena.storeCounted(6, 'failed');
    expect(arena.read(short, 0, 5)).toBe('hello');
    expect(arena.read(chain, 0, long.length)).toBe(long);
    expect(arena.read(chain, 2 * CHUNK_DATA_BYTES, 10)).toBe(long.slice(2 * CHUNK_DATA_BYTES, 2 * CHUNK_DATA_BYTES + 10));
    expect(arena.readCounted(counted)).toBe('failed');
  });

  it('stores bytes as they are, valid UTF-8 or not, and reads back a copy', () => {
    const arena = new Arena(arenaBuffer(4 * INITIAL_ARENA_BYTES), new Float64Array(HEADER_FIELDS));
    // Exclusive mode keeps short strings as given; bytes must still be written, not kept.
    arena.keepStrings();
    const notUtf8 = Uint8Array.of(0xff, 0xfe, 0xc3, 0x00, 0x80, 0xed, 0xa0, 0x80);
    const long = Uint8Array.from({ length: 10 * CHUNK_DATA_BYTES + 3 }, (_, i) => (i * 131 + 7) & 0xff);
    const short = arena.storeBytes(notUtf8);
    const chain = arena.storeBytes(long);
    expect(arena.storeBytes(new Uint8Array(0))).toBe(0);
    expect(arena.readBytes(0, 0, 0)).toEqual(new Uint8Array(0));
    const readShort = arena.readBytes(short, 0, notUtf8.length);
    expect(readShort).toEqual(notUtf8);
    expect(arena.readBytes(chain, 0, long.length)).toEqual(long);
    const at = 2 * CHUNK_DATA_BYTES + 5;
    expect(arena.readBytes(chain, at, 100)).toEqual(long.subarray(at, at + 100));
    // A copy: writing to what was read leaves the arena's bytes as they were.
    readShort[0] = 0;
    expect(arena.readBytes(short, 0, notUtf8.length)).toEqual(notUtf8);
    // The chunks count as a string's of the same byte length do.
    const before = arena.freeChunks;
    arena.free(chain, long.length);
    expect(arena.freeChunks - before).toBe(Arena.chunksFor(long.length));
  });

  it('copies bytes by words or by bytes alike: any source offset, any length, any read offset', () => {
    const arena = new Arena(arenaBuffer(4 * INITIAL_ARENA_BYTES), new Float64Array(HEADER_FIELDS));
    const backing = Uint8Array.from({ length: 5 * CHUNK_DATA_BYTES + 11 }, (_, i) => (i * 37 + 3) & 0xff);
    for (const offset of [0, 1, 2, 3, 4]) {
      for (const length of [1, 3, 4, 5, CHUNK_DATA_BYTES - 1, CHUNK_DATA_BYTES, CHUNK_DATA_BYTES + 1, 4 * CHUNK_DATA_BYTES + 6]) {
        const source = backing.subarray(offset, offset + length);
        const ref = arena.storeBytes(source);
        expect(arena.readBytes(ref, 0, length)).toEqual(source);
        for (const skip of [1, 2, 4, CHUNK_DATA_BYTES + 3].filter((skip) => skip < length)) {
          expect(arena.readBytes(ref, skip, length - skip)).toEqual(source.subarray(skip));
        }
        arena.free(ref, length);
      }
    }
  });

  it('stores a binary result as a counted chain marked binary, its length read without the mark', () => {
    const arena = new Arena(arenaBuffer(4 * INITIAL_ARENA_BYTES), new Float64Array(HEADER_FIELDS));
    const bytes = Uint8Array.from({ length: 3 * CHUNK_DATA_BYTES + 1 }, (_, i) => (255 - i) & 0xff);
    const binary = arena.storeCountedBytes(bytes.subarray(1));
    const textual = arena.storeCounted(5, 'hello');
    expect([arena.countedBinary(binary), arena.countedBinary(textual)]).toEqual([true, false]);
    expect(arena.countedBytes(binary)).toBe(bytes.length - 1);
    expect(arena.readCountedBytes(binary)).toEqual(bytes.subarray(1));
    expect(arena.readCounted(textual)).toBe('hello');
    // An empty one: the length alone.
    const empty = arena.storeCountedBytes(new Uint8Array(0));
    expect([arena.countedBinary(empty), arena.readCountedBytes(empty)]).toEqual([true, new Uint8Array(0)]);
  });

  it('refuses bytes with no room left, taking nothing', () => {
    const arena = new Arena(arenaBuffer(INITIAL_ARENA_BYTES), new Float64Array(HEADER_FIELDS));
    const free = arena.freeChunks;
    expect(arena.storeBytes(new Uint8Array((free + 1) * CHUNK_DATA_BYTES))).toBe(-1);
    expect(arena.freeChunks).toBe(free);
  });

  it('grows its buffer past INITIAL_ARENA_BYTES as chunks are taken, and counts the room it may grow to', () => {
    const buffer = arenaBuffer(16 * INITIAL_ARENA_BYTES);
    const arena = new Arena(buffer, new Float64Array(HEADER_FIELDS));
    const maxChunks = Math.floor((16 * INITIAL_ARENA_BYTES) / CHUNK_BYTES) - 1;
    expect(arena.freeChunks).toBe(maxChunks);
    const strings = Array.from({ length: 2000 }, (_, i) => text(i, 3 * CHUNK_DATA_BYTES));
    const refs = strings.map((s) => arena.store(s.length, s));
    expect(buffer.byteLength).toBeGreaterThan(INITIAL_ARENA_BYTES);
    expect(buffer.byteLength).toBeLessThan(2 * 2001 * 3 * CHUNK_BYTES + INITIAL_ARENA_BYTES);
    expect(arena.freeChunks).toBe(maxChunks - 3 * strings.length);
    expect(refs.every((ref, i) => arena.read(ref, 0, strings[i]!.length) === strings[i])).toBe(true);
  });

  it('shows chains another view stored past its own view', () => {
    const buffer = arenaBuffer(16 * INITIAL_ARENA_BYTES);
    const header = new Float64Array(new SharedArrayBuffer(HEADER_FIELDS * 8));
    // Two views of one arena, as two threads hold them: `reader` made before any growth.
    const writer = new Arena(buffer, header);
    const reader = new Arena(buffer, header);
    const strings = Array.from({ length: 3000 }, (_, i) => text(i, 2 * CHUNK_DATA_BYTES + 1));
    const refs = strings.map((s) => writer.store(s.length, s));
    expect(buffer.byteLength).toBeGreaterThan(INITIAL_ARENA_BYTES);
    expect(refs.every((ref, i) => reader.read(ref, 0, strings[i]!.length) === strings[i])).toBe(true);
    const counted = writer.storeCounted(5, 'late!');
    expect(reader.countedBytes(counted)).toBe(5);
    expect(reader.readCounted(counted)).toBe('late!');
  });

  it('refuses a string with no room left, taking nothing, and reuses freed chunks', () => {
    const buffer = arenaBuffer(2 * INITIAL_ARENA_BYTES);
    const arena = new Arena(buffer, new Float64Array(HEADER_FIELDS));
    const big = text(0, CHUNK_DATA_BYTES * 100);
    const refs: number[] = [];
    for (;;) {
      const ref = arena.store(big.length, big);
      if (ref < 0) break;
      refs.push(ref);
    }
    const free = arena.freeChunks;
    expect(free).toBeLessThan(100);
    expect(buffer.byteLength).toBe(2 * INITIAL_ARENA_BYTES);
    expect(arena.store(big.length, big)).toBe(-1);
    expect(arena.freeChunks).toBe(free);
    arena.free(refs[0]!, big.length);
    expect(arena.freeChunks).toBe(free + 100);
    const again = arena.store(big.length, big);
    expect(again).toBeGreaterThan(0);
    expect(arena.read(again, 0, big.length)).toBe(big);
  });

  it('reads a ref past the whole buffer as nothing (a racing reader, which re-checks its slot)', () => {
    const buffer = arenaBuffer(4 * INITIAL_ARENA_BYTES);
    const arena = new Arena(buffer, new Float64Array(HEADER_FIELDS));
    const beyond = Math.floor((4 * INITIAL_ARENA_BYTES) / CHUNK_BYTES) - 1;
    expect(arena.read(beyond, 0, 10)).toBe('');
    expect(arena.countedBytes(beyond)).toBe(0);
    expect(buffer.byteLength).toBe(INITIAL_ARENA_BYTES);
  });

  describe('runs (long strings stored contiguously)', () => {
    /** Bytes that differ by `seed` and by place (a period of 251, a prime), so a run overlapping another, or read from the wrong place, shows. */
    function bytesOf(seed: number, length: number): Uint8Array {
      const bytes = new Uint8Array(length);
      for (let i = 0; i < Math.min(length, 251); i++) bytes[i] = (seed * 131 + i * 7) & 0xff;
      for (let done = 251; done < length; done *= 2) bytes.copyWithin(done, 0, Math.min(done, length - done));
      return bytes;
    }

    /** Whether two byte arrays hold the same bytes (natively: an element-wise toEqual of megabytes takes seconds). */
    function same(a: Uint8Array, b: Uint8Array): boolean {
      return a.length === b.length && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0;
    }

    /** A small seeded generator (mulberry32): the same cycles every run. */
    function random(seed: number): () => number {
      let a = seed >>> 0;
      return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = Math.imul(a ^ (a >>> 15), 1 | a);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
    }

    it('hands out a long binary string as a view onto the shared buffer, not a copy, and reads copies elsewhere', () => {
      const buffer = arenaBuffer(64 * INITIAL_ARENA_BYTES);
      const arena = new Arena(buffer, new Float64Array(HEADER_FIELDS));
      const bytes = bytesOf(1, 1024 * 1024);
      const ref = arena.storeBytes(bytes);
      const view = arena.viewBytes(ref, 0, bytes.length);
      expect(view.buffer).toBe(buffer);
      expect(same(view, bytes)).toBe(true);
      const copy = arena.readBytes(ref, 0, bytes.length);
      expect(copy.buffer).not.toBe(buffer);
      // The view is the arena's memory: a write through it is what the next read finds.
      view[12345] = bytes[12345]! ^ 0xff;
      expect(arena.readBytes(ref, 12345, 1)[0]).toBe(bytes[12345]! ^ 0xff);
      expect(copy[12345]).toBe(bytes[12345]);
      // A short string stays a chain, read as a copy.
      const short = arena.storeBytes(bytesOf(2, 10 * CHUNK_DATA_BYTES));
      expect(arena.viewBytes(short, 0, 10 * CHUNK_DATA_BYTES).buffer).not.toBe(buffer);
    });

    it("keeps a view valid while the buffer grows, and shows another view's run stored past its own view", () => {
      const buffer = arenaBuffer(64 * INITIAL_ARENA_BYTES);
      const header = new Float64Array(new SharedArrayBuffer(HEADER_FIELDS * 8));
      const writer = new Arena(buffer, header);
      const reader = new Arena(buffer, header);
      const first = bytesOf(3, 100_000);
      const view = writer.viewBytes(writer.storeBytes(first), 0, first.length);
      const grownFrom = buffer.byteLength;
      const later = Array.from({ length: 20 }, (_, i) => bytesOf(10 + i, 200_000));
      const refs = later.map((bytes) => writer.storeBytes(bytes));
      expect(buffer.byteLength).toBeGreaterThan(grownFrom);
      expect(same(view, first)).toBe(true);
      refs.forEach((ref, i) => {
        const seen = reader.viewBytes(ref, 0, later[i]!.length);
        expect(seen.buffer).toBe(buffer);
        expect(same(seen, later[i]!)).toBe(true);
      });
      // Text in a run decodes in place, after a leading part and with a skip.
      const text = 'é'.padEnd(9000, 'xyz');
      const textRef = writer.store(Buffer.byteLength('type!') + Buffer.byteLength(text), 'type!', text);
      expect(reader.read(textRef, 5, Buffer.byteLength(text))).toBe(text);
      const counted = writer.storeCounted(Buffer.byteLength(text), text);
      expect(reader.readCounted(counted)).toBe(text);
      const countedBytes = writer.storeCountedBytes(later[0]!);
      expect(same(reader.readCountedBytes(countedBytes), later[0]!)).toBe(true);
    });

    it('gives a run whenever the free chunks hold a stretch that long: freed runs are merged (long-lived, mixed sizes)', () => {
      const buffer = arenaBuffer(8 * INITIAL_ARENA_BYTES);
      const arena = new Arena(buffer, new Float64Array(HEADER_FIELDS));
      const totalChunks = Math.floor(buffer.maxByteLength / CHUNK_BYTES);
      const next = random(37);
      // Live runs by first chunk: [chunks, bytes]; every store here is long, so each is a run while one fits.
      const live = new Map<number, { chunks: number; bytes: Uint8Array }>();
      const widestFreeStretch = () => {
        const used = new Uint8Array(totalChunks);
        used.fill(1, 0, FIRST_CHUNK);
        for (const [first, { chunks }] of live) used.fill(1, first, first + chunks);
        let widest = 0;
        for (let at = 0; at < totalChunks; ) {
          const start = used.indexOf(0, at);
          if (start < 0) break;
          let end = used.indexOf(1, start);
          if (end < 0) end = totalChunks;
          widest = Math.max(widest, end - start);
          at = end;
        }
        return widest;
      };
      let runs = 0;
      for (let cycle = 0; cycle < 1500; cycle++) {
        // Free a random few, as evictions of a long-lived queue do, in any order.
        while (live.size > 0 && (next() < 0.45 || arena.freeChunks < totalChunks / 8)) {
          const firsts = [...live.keys()];
          const first = firsts[Math.floor(next() * firsts.length)]!;
          const { bytes } = live.get(first)!;
          expect(same(arena.readBytes(first, 0, bytes.length), bytes)).toBe(true);
          arena.free(first, bytes.length);
          live.delete(first);
        }
        const length = RUN_MIN_CHUNKS * CHUNK_DATA_BYTES + Math.floor(next() * next() * 120_000);
        const chunks = Arena.chunksFor(length);
        if (chunks > arena.freeChunks) continue;
        const mustRun = widestFreeStretch() >= chunks;
        const bytes = bytesOf(cycle, length);
        const ref = arena.storeBytes(bytes);
        expect(ref).toBeGreaterThan(0);
        const isRun = arena.viewBytes(ref, 0, length).buffer === buffer;
        expect(isRun).toBe(mustRun);
        // A chain has no single place: freed at once, so the model above stays exact.
        if (!isRun) {
          expect(same(arena.readBytes(ref, 0, length), bytes)).toBe(true);
          arena.free(ref, length);
          continue;
        }
        runs++;
        for (const [first, other] of live) expect(ref + chunks <= first || first + other.chunks <= ref).toBe(true);
        live.set(ref, { chunks, bytes });
      }
      expect(runs).toBeGreaterThan(1000);
      for (const [first, { bytes }] of live) {
        expect(same(arena.readBytes(first, 0, bytes.length), bytes)).toBe(true);
        arena.free(first, bytes.length);
      }
      // Everything free: one run takes every chunk.
      const all = arena.freeChunks;
      expect(all).toBe(totalChunks - FIRST_CHUNK);
      const whole = arena.storeBytes(bytesOf(9, all * CHUNK_DATA_BYTES));
      expect(arena.viewBytes(whole, 0, all * CHUNK_DATA_BYTES).buffer).toBe(buffer);
    });

    it('never refuses while enough chunks are free, short chains and long runs mixed, every string intact', () => {
      const buffer = arenaBuffer(4 * INITIAL_ARENA_BYTES);
      const arena = new Arena(buffer, new Float64Array(HEADER_FIELDS));
      const totalChunks = Math.floor(buffer.maxByteLength / CHUNK_BYTES);
      const next = random(5);
      const live: Array<{ ref: number; bytes: Uint8Array | string }> = [];
      const check = ({ ref, bytes }: (typeof live)[number]) => {
        if (typeof bytes === 'string') expect(arena.read(ref, 0, bytes.length)).toBe(bytes);
        else expect(same(arena.readBytes(ref, 0, bytes.length), bytes)).toBe(true);
      };
      for (let cycle = 0; cycle < 4000; cycle++) {
        while (live.length > 0 && (next() < 0.4 || arena.freeChunks < totalChunks / 10)) {
          const [gone] = live.splice(Math.floor(next() * live.length), 1);
          check(gone!);
          arena.free(gone!.ref, gone!.bytes.length);
        }
        const kind = next();
        const length = kind < 0.6 ? 1 + Math.floor(next() * 300) : kind < 0.8 ? 1000 + Math.floor(next() * 3000) : 4096 + Math.floor(next() * 60_000);
        if (Arena.chunksFor(length) > arena.freeChunks) continue;
        const bytes = kind < 0.3 ? text(cycle, length) : bytesOf(cycle, length);
        const ref = typeof bytes === 'string' ? arena.store(length, bytes) : arena.storeBytes(bytes);
        expect(ref).toBeGreaterThan(0);
        live.push({ ref, bytes });
      }
      live.forEach(check);
      for (const { ref, bytes } of live) arena.free(ref, bytes.length);
      expect(arena.freeChunks).toBe(totalChunks - FIRST_CHUNK);
    });

    it('rebuilds the free lists from the strings still used, runs and chains', () => {
      const buffer = arenaBuffer(8 * INITIAL_ARENA_BYTES);
      const header = new Float64Array(HEADER_FIELDS);
      const arena = new Arena(buffer, header);
      const kept = [bytesOf(1, 50_000), bytesOf(2, 300), bytesOf(3, 80_000)];
      const dropped = [bytesOf(4, 70_000), bytesOf(5, 500)];
      const keptRefs = kept.map((bytes) => arena.storeBytes(bytes));
      for (const bytes of dropped) arena.storeBytes(bytes);
      const before = arena.freeChunks;
      arena.rebuild(keptRefs.flatMap((ref, i) => [ref, kept[i]!.length]));
      expect(arena.freeChunks).toBe(before + dropped.reduce((sum, bytes) => sum + Arena.chunksFor(bytes.length), 0));
      // The dropped run's room serves a run again; the kept strings are intact.
      const again = arena.storeBytes(bytesOf(6, 70_000));
      expect(arena.viewBytes(again, 0, 70_000).buffer).toBe(buffer);
      keptRefs.forEach((ref, i) => expect(same(arena.readBytes(ref, 0, kept[i]!.length), kept[i]!)).toBe(true));
    });
  });
});
