import { WORKER_ENTRY_BYTES, WORKER_NAMES, WORKER_NAME_BYTES, WORKER_NAME_COUNT } from './layout.js';

/**
 * The worker ids that poll, each stored once in shared memory, so a job's
 * record can name the worker of its latest lease with one number. Each thread
 * remembers the numbers it has looked up; only the first poll of a new worker
 * id searches the table (under the queue lock).
 */
export class WorkerNames {
  readonly #bytes: Buffer;
  readonly #lengths: Int32Array;
  readonly #header: Float64Array;
  readonly #known = new Map<string, number>();

  constructor(buffer: SharedArrayBuffer, header: Float64Array) {
    this.#bytes = Buffer.from(buffer);
    this.#lengths = new Int32Array(buffer);
    this.#header = header;
  }

  /** The number of `name` (entry + 1), adding it if new; 0 if it does not fit. Under the queue lock. */
  numberOf(name: string): number {
    const known = this.#known.get(name);
    if (known !== undefined) return known;
    const count = this.#header[WORKER_NAME_COUNT]!;
    let found = 0;
    for (let entry = 0; entry < count && found === 0; entry++) if (this.nameOf(entry + 1) === name) found = entry + 1;
    if (found === 0 && count < WORKER_NAMES && Buffer.byteLength(name) <= WORKER_NAME_BYTES) {
      const at = count * WORKER_ENTRY_BYTES;
      this.#lengths[at >> 2] = this.#bytes.write(name, at + 4, 'utf8');
      // Counted last: the entry exists once it is whole.
      this.#header[WORKER_NAME_COUNT] = count + 1;
      found = count + 1;
    }
    this.#known.set(name, found);
    return found;
  }

  /** The number of `name` if this thread has looked it up before, else -1 (a lookup needs the lock). */
  known(name: string): number {
    return this.#known.get(name) ?? -1;
  }

  nameOf(number: number): string | null {
    if (number <= 0) return null;
    const at = (number - 1) * WORKER_ENTRY_BYTES;
    return this.#bytes.toString('utf8', at + 4, at + 4 + this.#lengths[at >> 2]!);
  }
}
