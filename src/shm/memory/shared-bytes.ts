/**
 * A Uint8Array over shared memory whose `fill` stores words. V8 (Node 20)
 * fills a Uint8Array over a SharedArrayBuffer a byte at a time: 1 MiB took
 * 0.30 ms, against 0.05 ms over an ArrayBuffer and 0.08 ms as an Int32Array
 * over the same shared bytes (measured on Node 20.20, 2-core EPYC), which
 * gave back most of the copy a reservation saves its producer (see
 * ReservedBytes). `set`, `copyWithin` and element stores are as fast on
 * shared memory as on any other, and are left as they are. Everything else
 * is a Uint8Array's, `subarray` and `slice` included (of this class too).
 */
export class SharedBytes extends Uint8Array<SharedArrayBuffer> {
  override fill(value: number, start?: number, end?: number): this {
    // The common call, a number over a long span; anything else (a BigInt refused, an index object, an end
    // without a start, which Node 20's V8 reads as the whole array) as the built-in does.
    if (typeof value !== 'number' || !isIndex(start) || !isIndex(end) || (start === undefined && end !== undefined)) return super.fill(value, start, end);
    const length = this.length;
    const from = relativeIndex(start, 0, length);
    const to = relativeIndex(end, length, length);
    if (to - from < WORD_FILL_MIN) return super.fill(value, from, to);
    // ToUint8, as fill converts a number (NaN and the infinities to 0).
    const byte = value & 0xff;
    // The words in [from, to), by their place in the buffer; the bytes either side of them one by one.
    const first = (this.byteOffset + from + 3) & ~3;
    const last = (this.byteOffset + to) & ~3;
    super.fill(byte, from, first - this.byteOffset);
    new Int32Array(this.buffer, first, (last - first) >> 2).fill(byte * 0x01010101);
    super.fill(byte, last - this.byteOffset, to);
    return this;
  }
}

/** Spans shorter than this are filled by the built-in: the word view costs more than it saves. */
const WORD_FILL_MIN = 256;

function isIndex(index: unknown): index is number | undefined {
  return index === undefined || typeof index === 'number';
}

/** A fill's start or end as the built-in reads it: from the end if negative, clamped to [0, length]; `fallback` if undefined. */
function relativeIndex(index: number | undefined, fallback: number, length: number): number {
  if (index === undefined) return fallback;
  const integer = Number.isNaN(index) ? 0 : Math.trunc(index);
  return integer < 0 ? Math.max(length + integer, 0) : Math.min(integer, length);
}
