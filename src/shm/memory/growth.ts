import * as step from './steps.js';

/**
 * Growth of a queue's growable buffers (see "Growth" in layout.ts).
 *
 * A growable SharedArrayBuffer reserves its maxByteLength of address space
 * and commits only its byteLength; `grow` commits more, for every thread
 * that holds the buffer at once. Views are fixed-length, made over the bytes
 * the buffer had when they were made, and re-made by their table when it
 * meets an index past them: a length-tracking view (`new Int32Array(sab)`)
 * would follow the growth by itself, but on Node 20 every element access
 * through one costs 5 to 30 times a fixed view's (measured: a read-modify-write
 * loop over 64k Int32s, 1.6 s against 0.2 s), and the tables' loops are the
 * hot paths.
 *
 * The rule every growing table keeps: a thread grows the buffer *before* it
 * publishes an index into the new bytes (a heap size, an arena bump, a level
 * count, a row owned), so any thread that reads the index finds the bytes
 * there, and re-makes its own view when the index is past it.
 */

/**
 * Grows `buffer` to hold at least `bytes`; returns its byteLength. Safe from
 * any thread at any time: a grow is atomic, and one that lost a race to a
 * larger grow is refused (a RangeError) with the room it wanted there already.
 */
export function growTo(buffer: SharedArrayBuffer, bytes: number): number {
  const now = step.byteLength(buffer);
  if (now >= bytes) return now;
  const max = buffer.maxByteLength;
  if (bytes > max) throw new RangeError(`A queue buffer cannot grow to ${bytes} bytes: it holds at most ${max}`);
  try {
    step.grow(buffer, bytes);
  } catch (error) {
    // Lost a race to another thread's grow: it is either large enough or the caller's want was bad.
    if (step.byteLength(buffer) < bytes) throw error;
  }
  return step.byteLength(buffer);
}

/**
 * `growTo`, doubling: at least twice the length it has (and at least
 * `minimum`, at most its maxByteLength), so that n entries pushed one by one
 * cost O(log n) grows.
 */
export function growDoubling(buffer: SharedArrayBuffer, bytes: number, minimum: number): number {
  const now = step.byteLength(buffer);
  if (now >= bytes) return now;
  return growTo(buffer, Math.max(bytes, Math.min(buffer.maxByteLength, Math.max(2 * now, minimum))));
}

/** Elements of `array`'s type the buffer holds now, from `byteOffset` on: the length of a view re-made over it. */
export function elementsIn(buffer: SharedArrayBuffer, bytesPerElement: number, byteOffset = 0): number {
  return Math.floor((step.byteLength(buffer) - byteOffset) / bytesPerElement);
}
