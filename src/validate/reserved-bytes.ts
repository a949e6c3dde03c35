/**
 * `reserveBytes` and `releaseBytes` at the edge, as every backend takes
 * them: a length an integer from 0 to `maxPayloadBytes`, a release of a
 * Uint8Array the queue handed out. And the plain reservations of a queue
 * that has no shared memory to reserve in (Redis): a new Uint8Array, which
 * its submit sends as any other.
 */
import { InvalidArgumentError, describe } from '../errors.js';
import { checkIntegerIn } from './numbers.js';

/** A length for `reserveBytes`: an integer from 0 to `maxPayloadBytes`. */
export function checkReserveLength(byteLength: unknown, maxPayloadBytes: number): asserts byteLength is number {
  checkIntegerIn('byteLength', byteLength, 0, maxPayloadBytes);
}

/** What `releaseBytes` takes: a Uint8Array. */
export function checkReleased(bytes: unknown): asserts bytes is Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError(`Expected \`bytes\` to be a Uint8Array from reserveBytes, got ${describe(bytes)}`);
}

/** `releaseBytes` of a Uint8Array this queue instance never handed out. */
export function notReserved(): InvalidArgumentError {
  return new InvalidArgumentError('Expected `bytes` to be a Uint8Array this queue instance handed out by reserveBytes (the very one: not a copy or a subarray of it)');
}

/** The reservations of a queue with no shared memory: plain Uint8Arrays, known so that `release` can tell them. */
export class PlainReservations {
  readonly #handed = new WeakSet<Uint8Array>();

  reserve(byteLength: unknown, maxPayloadBytes: number): Uint8Array {
    checkReserveLength(byteLength, maxPayloadBytes);
    const bytes = new Uint8Array(byteLength);
    this.#handed.add(bytes);
    return bytes;
  }

  /** Nothing to give back (the garbage collector takes it); refused for a Uint8Array not handed out here. */
  release(bytes: unknown): void {
    checkReleased(bytes);
    if (!this.#handed.has(bytes)) throw notReserved();
  }
}
