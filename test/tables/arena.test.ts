import { describe, expect, it } from 'vitest';
import { Arena } from '../../dist/shm/tables/arena.js';
import { CHUNK_BYTES, CHUNK_DATA_BYTES, HEADER_FIELDS, INITIAL_ARENA_BYTES } from '../../dist/shm/memory/layout.js';

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
});
