import { NAME_BYTES, NAME_ENTRY_BYTES } from '../memory/layout.js';


/** What `known` answers for a name whose entry this thread has not read (it may have none yet). */
export const UNREAD = -1;
/**
 * A table of strings stored once each in shared memory (see name tables in
 * layout.ts), so that a record names one with a small number: the worker ids
 * that poll, the job types that are submitted.
 *
 * Concurrency contract: only the queue-lock holder appends; any thread reads
 * the entries its count covers. An entry never changes once counted, so each
 * thread keeps what it has decoded: a name costs one decode per thread, and a
 * lookup of a new name reads only the entries this thread has not read yet.
 */
export class NameTable {
  readonly #bytes: Buffer;
  readonly #lengths: Int32Array;
  readonly #header: Float64Array;
  readonly #countField: number;
  readonly #entries: number;
  readonly #numbers = new Map<string, number>();
  /** This thread's copy of the names, by number (index 0 unused). */
  readonly #names: string[] = [''];

  constructor(buffer: SharedArrayBuffer, header: Float64Array, countField: number) {
    this.#bytes = Buffer.from(buffer);
    this.#lengths = new Int32Array(buffer);
    this.#header = header;
    this.#countField = countField;
    this.#entries = buffer.byteLength / NAME_ENTRY_BYTES;
  }

  /** The number of `name` (entry + 1), adding it if new; 0 if it does not fit. Under the queue lock. */
  numberOf(name: string): number {
    const known = this.known(name);
    if (known >= 0) return known;
    this.#readNew();
    const found = this.#numbers.get(name);
    if (found !== undefined) return found;
    const count = this.#header[this.#countField]!;
    if (count >= this.#entries || Buffer.byteLength(name) > NAME_BYTES) {
      // Remembered: a full table stays full and a long name stays long, so the answer stands (and `known` gives it lock-free).
      this.#numbers.set(name, 0);
      return 0;
    }
    const at = count * NAME_ENTRY_BYTES;
    this.#lengths[at >> 2] = this.#bytes.write(name, at + 4, 'utf8');
    // Counted last: the entry exists once it is whole.
    this.#header[this.#countField] = count + 1;
    this.#readNew();
    return count + 1;
  }

  /** The number of `name` if this thread has read its entry (0: it has none), else UNREAD (adding one needs the lock). */
  known(name: string): number {
    return this.#numbers.get(name) ?? UNREAD;
  }

  /** The name numbered `number`; null for 0 (none) or a number not in the table. */
  nameOf(number: number): string | null {
    if (number <= 0) return null;
    if (number >= this.#names.length) this.#readNew();
    return this.#names[number] ?? null;
  }

  /** Reads the entries counted since this thread last looked. */
  #readNew(): void {
    const names = this.#names;
    for (let number = names.length, count = this.#header[this.#countField]!; number <= count; number++) {
      const at = (number - 1) * NAME_ENTRY_BYTES;
      const name = this.#bytes.toString('utf8', at + 4, at + 4 + this.#lengths[at >> 2]!);
      names.push(name);
      this.#numbers.set(name, number);
    }
  }
}
