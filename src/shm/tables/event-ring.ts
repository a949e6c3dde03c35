import * as step from '../memory/steps.js';
import type { WordAccess } from '../memory/access.js';
import {
  EVENT_ATTEMPT, EVENT_CLAIM, EVENT_DONE, EVENT_DURATION, EVENT_ENTRIES, EVENT_ENTRY_WORDS, EVENT_ERROR_BYTES, EVENT_FLAGS, EVENT_HEADER_WORDS, EVENT_JOB_NUM, EVENT_KIND,
  EVENT_OPEN, EVENT_PUBLISHED, EVENT_STALLED, EVENT_SUBSCRIBERS, EVENT_TEXT, EVENT_TEXT_BYTES, EVENT_TYPE_BYTES, EVENT_WAIT,
} from '../memory/layout.js';

/** One event as the ring holds it (see Event ring in layout.ts). */
export interface RingEvent {
  kind: number;
  jobNum: number;
  type: string;
  attempt: number;
  waitMillis: number;
  durationMs: number;
  error: string | undefined;
  stalled: boolean;
}

/** What `read` found at a position. */
export enum ReadOutcome {
  /** The event is in `out`. */
  Read,
  /** Not published yet (its writer is still at it, or claimed it and died): wait for PUBLISHED to move. */
  Unpublished,
  /** A later event overwrote the entry before or while it was read: it is lost to this reader. */
  Overwritten,
}

const MASK = EVENT_ENTRIES - 1;
const FULL_BYTES = (EVENT_HEADER_WORDS + EVENT_ENTRIES * EVENT_ENTRY_WORDS) * Int32Array.BYTES_PER_ELEMENT;

/**
 * A queue's event ring (layout.ts, Event ring): any thread may write (whoever makes a move: a
 * lock holder, or a lock-free complete on any worker thread), any thread may read, each reader at
 * its own position; no thread waits for another. Writers race for entries by one Atomics.add of
 * CLAIM, so each event has its own sequence number; an entry is a seqlock whose stamps are that
 * number + 1, taken by a CAS of OPEN from idle, so two writers a ring apart never write one entry
 * at once. A reader is never told an event that was not whole: it sees an entry only once DONE
 * names it (stored after every field), and keeps it only if OPEN still names it after its reads
 * (a writer that laps the ring stores OPEN before its first field). A reader that falls more than
 * EVENT_ENTRIES behind CLAIM has lost the events in between, and counts them.
 *
 * Every word goes through Atomics (the steps seam): plain reads and writes could be reordered past
 * the stamps on a weakly ordered CPU, and a racing Float64 read may tear.
 */
export class EventRing {
  readonly #buffer: SharedArrayBuffer;
  readonly #header: Int32Array;
  /** The whole buffer, once grown: made on first use by this thread. */
  #words: Int32Array | undefined;
  readonly #scratch = new Float64Array(1);
  readonly #halves = new Int32Array(this.#scratch.buffer);
  readonly #text = new Uint8Array(EVENT_TEXT_BYTES);
  readonly #textWords = new Int32Array(this.#text.buffer);
  readonly #encoder = new TextEncoder();
  readonly #decoder = new TextDecoder();

  readonly #access: WordAccess;

  constructor(buffer: SharedArrayBuffer, access: WordAccess) {
    this.#buffer = buffer;
    this.#header = new Int32Array(buffer, 0, EVENT_HEADER_WORDS);
    this.#access = access;
  }

  /**
   * Whether anyone subscribes: a move writes an event only then. Pairs with the add in `subscribe`; a plain
   * read while the queue is exclusive, whose one thread is the only one that can subscribe.
   */
  subscribed(): boolean {
    return this.#access.load(this.#header, EVENT_SUBSCRIBERS) !== 0;
  }

  /**
   * Counts a subscriber in (growing the ring to its entries first, so that a writer that sees the
   * count sees them) and returns the position it starts reading at: the next event's.
   */
  subscribe(): number {
    // A grow to the length the buffer has already is no change, so racing subscribers may both grow.
    if (this.#buffer.byteLength < FULL_BYTES) this.#buffer.grow(FULL_BYTES);
    // Counted before CLAIM is read: an event claimed after that read is one this subscriber reads (its writer saw the count).
    step.add(this.#header, EVENT_SUBSCRIBERS, 1);
    return step.load(this.#header, EVENT_CLAIM) >>> 0;
  }

  unsubscribe(): void {
    step.sub(this.#header, EVENT_SUBSCRIBERS, 1);
  }

  /** The next event's sequence number. */
  claimed(): number {
    return step.load(this.#header, EVENT_CLAIM) >>> 0;
  }

  /** The PUBLISHED count, as a reader reads it before it looks, to wait on it after. */
  published(): number {
    return step.load(this.#header, EVENT_PUBLISHED);
  }

  /** The header, and PUBLISHED's index in it, for Atomics.waitAsync. */
  get waitWord(): readonly [Int32Array, number] {
    return [this.#header, EVENT_PUBLISHED];
  }

  /** Wakes every reader waiting on PUBLISHED (one that closes wakes its own wait so). */
  wakeReaders(): void {
    step.notify(this.#header, EVENT_PUBLISHED);
  }

  /** Writes one event, if anyone subscribes. `error` undefined: none. */
  publish(kind: number, jobNum: number, type: string, attempt: number, waitMillis: number, durationMs: number, error: string | undefined, stalled: boolean): void {
    const words = this.#entries();
    // The claim: this event's own sequence number, whatever other writers do at once.
    const seq = step.add(this.#header, EVENT_CLAIM, 1);
    const at = EVENT_HEADER_WORDS + (seq & MASK) * EVENT_ENTRY_WORDS;
    const stamp = (seq + 1) | 0;
    // Opens the entry before any field is written, by CAS from idle (OPEN = DONE, an older event's): a reader of the
    // event it held sees OPEN move and drops what it read. An entry another writer is still writing (it claimed an
    // event a whole ring earlier and has not finished) is left to it: this event is lost, and readers count it missed.
    // One that has been writing for more than a ring's worth of events since is taken for dead (a thread ended mid-write),
    // and its entry taken over, so that a death costs one event a lap for one lap, not one a lap for ever.
    const open = step.load(words, at + EVENT_OPEN);
    if (((open - stamp) | 0) >= 0) return;
    if (step.load(words, at + EVENT_DONE) !== open && ((stamp - open) | 0) <= EVENT_ENTRIES) return;
    if (step.compareExchange(words, at + EVENT_OPEN, open, stamp) !== open) return;
    step.store(words, at + EVENT_KIND, kind);
    step.store(words, at + EVENT_FLAGS, stalled ? EVENT_STALLED : 0);
    step.store(words, at + EVENT_ATTEMPT, attempt);
    this.#storeNumber(words, at + EVENT_JOB_NUM, jobNum);
    this.#storeNumber(words, at + EVENT_WAIT, waitMillis);
    this.#storeNumber(words, at + EVENT_DURATION, durationMs);
    const text = this.#text;
    // encodeInto writes whole characters only: a text cut to fit is cut between two.
    const typeBytes = this.#encoder.encodeInto(type, text).written;
    const errorBytes = error === undefined ? -1 : this.#encoder.encodeInto(error, text.subarray(typeBytes)).written;
    step.store(words, at + EVENT_TYPE_BYTES, typeBytes);
    step.store(words, at + EVENT_ERROR_BYTES, errorBytes);
    const used = Math.ceil((typeBytes + Math.max(errorBytes, 0)) / Int32Array.BYTES_PER_ELEMENT);
    for (let i = 0; i < used; i++) step.store(words, at + EVENT_TEXT + i, this.#textWords[i]!);
    // Publishes the entry: after its last field. Pairs with the reader's first load of DONE in `read`.
    step.store(words, at + EVENT_DONE, stamp);
    // Counts it for readers waiting on PUBLISHED, and wakes them.
    step.add(this.#header, EVENT_PUBLISHED, 1);
    step.notify(this.#header, EVENT_PUBLISHED);
  }

  /** Reads the event at position `seq` into `out`. */
  read(seq: number, out: RingEvent): ReadOutcome {
    const words = this.#entries();
    const at = EVENT_HEADER_WORDS + (seq & MASK) * EVENT_ENTRY_WORDS;
    const stamp = (seq + 1) | 0;
    // Published? Pairs with the writer's store of DONE after its fields.
    const done = step.load(words, at + EVENT_DONE);
    if (done !== stamp) {
      // A later event has begun over this entry (or was written there): this one is gone. Else it is still to come.
      const open = step.load(words, at + EVENT_OPEN);
      return ((open - stamp) | 0) > 0 || ((done - stamp) | 0) > 0 ? ReadOutcome.Overwritten : ReadOutcome.Unpublished;
    }
    out.kind = step.load(words, at + EVENT_KIND);
    out.stalled = (step.load(words, at + EVENT_FLAGS) & EVENT_STALLED) !== 0;
    out.attempt = step.load(words, at + EVENT_ATTEMPT);
    out.jobNum = this.#loadNumber(words, at + EVENT_JOB_NUM);
    out.waitMillis = this.#loadNumber(words, at + EVENT_WAIT);
    out.durationMs = this.#loadNumber(words, at + EVENT_DURATION);
    const typeBytes = Math.min(Math.max(step.load(words, at + EVENT_TYPE_BYTES), 0), EVENT_TEXT_BYTES);
    const errorBytes = step.load(words, at + EVENT_ERROR_BYTES);
    const textBytes = Math.min(typeBytes + Math.max(errorBytes, 0), EVENT_TEXT_BYTES);
    const used = Math.ceil(textBytes / Int32Array.BYTES_PER_ELEMENT);
    for (let i = 0; i < used; i++) this.#textWords[i] = step.load(words, at + EVENT_TEXT + i);
    // Still this event's? Pairs with a lapping writer's store of OPEN before its first field: what was read is whole only if not.
    if (step.load(words, at + EVENT_OPEN) !== stamp) return ReadOutcome.Overwritten;
    out.type = this.#decoder.decode(this.#text.subarray(0, typeBytes));
    out.error = errorBytes < 0 ? undefined : this.#decoder.decode(this.#text.subarray(typeBytes, textBytes));
    return ReadOutcome.Read;
  }

  #entries(): Int32Array {
    return (this.#words ??= new Int32Array(this.#buffer, 0, FULL_BYTES / Int32Array.BYTES_PER_ELEMENT));
  }

  #storeNumber(words: Int32Array, at: number, value: number): void {
    this.#scratch[0] = value;
    step.store(words, at, this.#halves[0]!);
    step.store(words, at + 1, this.#halves[1]!);
  }

  #loadNumber(words: Int32Array, at: number): number {
    this.#halves[0] = step.load(words, at);
    this.#halves[1] = step.load(words, at + 1);
    return this.#scratch[0]!;
  }
}

/** How far `to` is ahead of `from`, as sequence numbers that wrap at 2^32. */
export function seqDistance(from: number, to: number): number {
  return (to - from) >>> 0;
}
