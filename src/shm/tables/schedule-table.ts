import * as step from '../memory/steps.js';
import { QueueFullError } from '../../errors.js';
import type { StoredSchedule } from '../../schedule/spec.js';

import {
  SCHEDULE_COPY_BYTES as COPY_BYTES, SCHEDULE_CURRENT as CURRENT, SCHEDULE_HEADER_BYTES as HEADER_BYTES, SCHEDULE_LENGTH as LENGTH,
} from '../memory/layout.js';

/**
 * A queue's schedules in shared memory, for every attached thread: the table
 * as JSON, in one of two copies. Read and written under the maintenance lock
 * only. A write fills the copy not in use, then switches to it with one
 * store, so a thread killed mid-write leaves the table as it was before.
 * Only `schedule`, `unschedule`, `schedules` and `runSchedules` touch it: a
 * queue without schedules never does.
 */
export class ScheduleTable {
  readonly #words: Int32Array;
  readonly #bytes: Uint8Array;

  constructor(buffer: SharedArrayBuffer) {
    this.#words = new Int32Array(buffer, 0, HEADER_BYTES / Int32Array.BYTES_PER_ELEMENT);
    this.#bytes = new Uint8Array(buffer, HEADER_BYTES);
  }

  read(): StoredSchedule[] {
    // Under the lock: which copy is in use, as its last writer switched to it...
    const copy = step.load(this.#words, CURRENT);
    // ...and that copy's length, stored before the switch.
    const length = step.load(this.#words, LENGTH + copy);
    if (length === 0) return [];
    // A copy out of shared memory first: a decoder does not read shared views.
    const bytes = this.#bytes.slice(copy * COPY_BYTES, copy * COPY_BYTES + length);
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString()) as StoredSchedule[];
  }

  /** Replaces the table; QueueFullError (nothing changed) if it does not fit. */
  write(schedules: readonly StoredSchedule[]): void {
    const text = Buffer.from(JSON.stringify(schedules));
    if (text.length > COPY_BYTES) {
      throw new QueueFullError(`The queue's schedules would take ${text.length} bytes of JSON, over the ${COPY_BYTES} its shared memory holds`);
    }
    // The copy not in use: no reader looks at it until the switch below.
    const spare = 1 - step.load(this.#words, CURRENT);
    this.#bytes.set(text, spare * COPY_BYTES);
    // The spare copy's length, stored before the switch...
    step.store(this.#words, LENGTH + spare, text.length);
    // ...then the switch, one store: a thread killed before it leaves the old table whole.
    step.store(this.#words, CURRENT, spare);
  }
}
