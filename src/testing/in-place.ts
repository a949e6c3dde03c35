/**
 * Payloads written in place (`reserveBytes`, I30 in src/shm/README.md) in a
 * recorded history, for the scheduled race histories (test/scheduled/,
 * test/fixtures/scheduled-thread.mjs). A reservation has a name, and its
 * producer fills it with that name's pattern (`patternOf`): the name's bytes,
 * a NUL, then bytes drawn from the name. The history speaks of it by name, so
 * the checker's model needs no bytes:
 *
 * - `reserve` and `release` are recorded as the calls `reserveBytes` and
 *   `releaseBytes` of that name, which change no job (the model steps over them);
 * - a submit whose payload is the name of a reservation still held is made
 *   with the reservation's very bytes (`wrap`), and recorded with the name as
 *   its payload;
 * - a payload that comes back as bytes (a lease's, a view's) is recorded as
 *   the name its bytes spell (`nameIn`): the name if they are exactly its
 *   pattern, else a description of how they differ, which no submit made.
 *
 * So the model's own payload comparison checks that a job made from a
 * reservation holds exactly what its producer wrote, each time it is leased
 * or viewed: a run handed to two reservations at once, or reused while a job
 * still held it, shows as one pattern overwritten by another.
 */

/** The calls of a queue this needs: JobQueue's. */
export interface InPlaceQueue {
  reserveBytes(byteLength: number): Uint8Array;
  releaseBytes(bytes: Uint8Array): void;
}

/** The longest name a pattern spells (names are short: a worker and a count). */
const MAX_NAME_BYTES = 32;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The bytes a reservation named `name` of `length` bytes is filled with. */
export function patternOf(name: string, length: number): Uint8Array {
  const spelled = encoder.encode(name);
  if (spelled.length === 0 || spelled.length > MAX_NAME_BYTES || spelled.includes(0)) throw new RangeError(`A reservation's name is 1 to ${MAX_NAME_BYTES} bytes, none NUL: ${name}`);
  if (length < spelled.length + 1) throw new RangeError(`${length} bytes cannot spell ${name}`);
  const bytes = new Uint8Array(length);
  bytes.set(spelled);
  // The rest from a seed of the name (FNV-1a), so that two names' patterns differ all along.
  let state = 0x811c9dc5;
  for (const byte of spelled) state = Math.imul(state ^ byte, 0x01000193);
  for (let i = spelled.length + 1; i < length; i++) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) | 0;
    bytes[i] = state >>> 24;
  }
  return bytes;
}

/** The name `bytes` spell if they are exactly its pattern; else what they are, which is no reservation's name. */
export function nameIn(bytes: Uint8Array): string {
  const end = bytes.subarray(0, MAX_NAME_BYTES + 1).indexOf(0);
  if (end <= 0) return `(${bytes.length} bytes that spell no name)`;
  const name = decoder.decode(bytes.subarray(0, end));
  const expected = patternOf(name, bytes.length);
  const differs = expected.findIndex((byte, i) => bytes[i] !== byte);
  return differs === -1 ? name : `(${bytes.length} bytes of ${name}'s pattern up to byte ${differs})`;
}

/** One thread's reservations, by name: the ones made and neither submitted nor released. */
export class InPlacePayloads {
  readonly #queue: InPlaceQueue;
  readonly #held = new Map<string, Uint8Array>();

  constructor(queue: InPlaceQueue) {
    this.#queue = queue;
  }

  /** Reserves `bytes` bytes as `name` and fills them with its pattern; whether they are the queue's shared memory (else a plain array, which a submit copies). */
  reserve(name: string, bytes: number): boolean {
    const reserved = this.#queue.reserveBytes(bytes);
    reserved.set(patternOf(name, bytes));
    this.#held.set(name, reserved);
    return reserved.buffer instanceof SharedArrayBuffer;
  }

  /** Gives the reservation `name` back. */
  release(name: string): void {
    const reserved = this.#take(name);
    this.#queue.releaseBytes(reserved);
  }

  /**
   * `queue` with its submit of a held reservation's name made with the
   * reservation's bytes (spent then, whatever the submit does), and the
   * binary payloads of its leases and views turned into the names they spell.
   */
  wrap<Q extends object>(queue: Q): Q {
    return new Proxy(queue, {
      get: (target, property) => {
        const value = Reflect.get(target, property) as unknown;
        if (typeof value !== 'function') return value;
        if (property === 'submit') {
          return (type: unknown, payload: unknown, ...rest: unknown[]) => {
            const bytes = typeof payload === 'string' && this.#held.has(payload) ? this.#take(payload) : payload;
            return value.call(target, type, bytes, ...rest) as unknown;
          };
        }
        if (property === 'poll' || property === 'completeAndPoll' || property === 'view') {
          return (...args: unknown[]) => named(value.apply(target, args));
        }
        return value.bind(target) as unknown;
      },
    });
  }

  #take(name: string): Uint8Array {
    const reserved = this.#held.get(name);
    if (reserved === undefined) throw new RangeError(`No reservation named ${name} is held`);
    this.#held.delete(name);
    return reserved;
  }
}

/** A lease or view with a binary payload, its payload replaced by the name its bytes spell; anything else as it is. */
function named(result: unknown): unknown {
  if (result === null || typeof result !== 'object') return result;
  const { payload } = result as { payload?: unknown };
  return payload instanceof Uint8Array ? { ...result, payload: nameIn(payload) } : result;
}
