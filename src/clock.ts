import * as step from './shm/memory/steps.js';
import { fromBits, toBits } from './shm/memory/float-bits.js';
import { InvalidArgumentError, describe } from './errors.js';

/** Where leasehold reads the time, in milliseconds. */
export interface TimeSource {
  now(): number;
}

/**
 * A reading of `time` taken again inside a call that has read it once, as
 * `since`: the later of the two. A clock that throws or gives no finite
 * number here leaves `since` (the call went on with a good reading, and user
 * code must not break a move halfway).
 */
export function laterReading(time: TimeSource, since: number): number {
  let reading: number;
  try {
    reading = time.now();
  } catch {
    return since;
  }
  return Number.isFinite(reading) && reading > since ? reading : since;
}

/** The wall clock: `Date.now()`. */
export const systemClock: TimeSource = Object.freeze({ now: () => Date.now() });

/**
 * A clock for tests that every thread sees alike: its time is one 64-bit word
 * in a SharedArrayBuffer, so `advance` on the main thread moves the clock of
 * every worker attached to the same queue. The word holds the bits of a
 * float64, so fractional milliseconds survive.
 */
export class ManualClock implements TimeSource {
  /** @internal The shared word: the float64 bits of the current time. */
  readonly buffer: SharedArrayBuffer;
  readonly #word: BigInt64Array;

  constructor(startMillis = 0, buffer?: SharedArrayBuffer) {
    assertFinite('startMillis', startMillis);
    this.buffer = buffer ?? new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT);
    this.#word = new BigInt64Array(this.buffer);
    if (buffer === undefined) step.store64(this.#word, 0, toBits(startMillis));
  }

  /** @internal A view of the same clock in another thread. */
  static fromBuffer(buffer: SharedArrayBuffer): ManualClock {
    return new ManualClock(0, buffer);
  }

  now(): number {
    return fromBits(step.load64(this.#word, 0));
  }

  set(ms: number): void {
    assertFinite('ms', ms);
    step.store64(this.#word, 0, toBits(ms));
  }

  advance(ms: number): void {
    assertFinite('ms', ms);
    // A CAS loop, so that two threads advancing at once both count.
    for (;;) {
      const seen = step.load64(this.#word, 0);
      if (step.compareExchange64(this.#word, 0, seen, toBits(fromBits(seen) + ms)) === seen) return;
    }
  }
}

function assertFinite(name: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be a finite number, got ${describe(value)}`);
  }
}

/** A clock as a handle carries it to another thread: a ManualClock's word, 'system', or null for one that cannot cross. */
export type SharedClock = SharedArrayBuffer | 'system' | null;

export function shareClock(time: TimeSource): SharedClock {
  return time instanceof ManualClock ? time.buffer : time === systemClock ? 'system' : null;
}

/** The clock a handle carries, in this thread. */
export function clockFromShare(clock: SharedClock): TimeSource {
  if (clock instanceof SharedArrayBuffer) return ManualClock.fromBuffer(clock);
  if (clock === 'system') return systemClock;
  throw new InvalidArgumentError('The queue was made with a TimeSource that cannot cross threads: pass one to attach(handle, time)');
}
