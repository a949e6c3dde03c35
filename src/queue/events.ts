/**
 * A subscription's reader of an in-memory or journaled queue's event ring (src/shm/tables/event-ring.ts),
 * on whatever thread subscribed: it reads every event published since its position, hands each on, and
 * then waits (Atomics.waitAsync, so the thread's event loop runs on) until a writer publishes more.
 *
 * Falling behind: the ring holds the last EVENT_ENTRIES events; a reader more than that behind the
 * writers, or one whose entry a later event overwrote while it read, has lost those events and
 * reports their count as `missed`. An entry claimed by a writer that has not published it yet holds
 * the reader there (events stay in order): a writer on a thread that died between its claim and its
 * publish holds it until the ring has lapped that entry, when the reader counts it missed.
 *
 * The position it reports is the sequence number of the next event it reads.
 */
import { jobIdOf } from '../job-id.js';
import { MOVE_KINDS, type EventSink, type EventSource } from '../events/queue-events.js';
import { EVENT_ENTRIES, ReadOutcome, seqDistance, type EventRing, type RingEvent } from '../shm/core.js';

/** Events handed on between two turns of the event loop at most, so that a long backlog does not hold the thread. */
const TURN_EVENTS = 1024;

export class RingReader implements EventSource {
  readonly #ring: EventRing;
  readonly #sink: EventSink;
  #position: number;
  #closed = false;
  readonly #running: Promise<void>;
  readonly #event: RingEvent = { kind: 0, jobNum: 0, type: '', attempt: 0, waitMillis: 0, durationMs: 0, error: undefined, stalled: false };

  /** Subscribes (the ring's count goes up until `close`) and reads from the next event on, or from `after`. */
  constructor(ring: EventRing, sink: EventSink, after: number | undefined) {
    this.#ring = ring;
    this.#sink = sink;
    const next = ring.subscribe();
    // A position ahead of the writers is no position of this queue's: read from the next event.
    this.#position = after === undefined || seqDistance(after >>> 0, next) > 2 ** 31 ? next : after >>> 0;
    this.#running = this.#run();
  }

  position(): string {
    return String(this.#position);
  }

  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#ring.unsubscribe();
      // Wakes this reader's wait (and every other reader's, which finds nothing new and waits again).
      this.#ring.wakeReaders();
    }
    return this.#running;
  }

  async #run(): Promise<void> {
    const ring = this.#ring;
    const [word, index] = ring.waitWord;
    const event = this.#event;
    while (!this.#closed) {
      // Read before looking: a publish after this read changes it, so the wait below returns at once.
      const published = ring.published();
      let handed = 0;
      let lost = 0;
      let waiting = false;
      while (handed < TURN_EVENTS) {
        const ahead = seqDistance(this.#position, ring.claimed());
        if (ahead === 0) {
          waiting = true;
          break;
        }
        if (ahead > EVENT_ENTRIES) {
          // Lapped: the oldest events the ring still holds are the last EVENT_ENTRIES claimed.
          lost += ahead - EVENT_ENTRIES;
          this.#position = (this.#position + ahead - EVENT_ENTRIES) >>> 0;
          continue;
        }
        const outcome = ring.read(this.#position, event);
        if (outcome === ReadOutcome.Unpublished) {
          waiting = true;
          break;
        }
        this.#position = (this.#position + 1) >>> 0;
        if (outcome === ReadOutcome.Overwritten) {
          lost++;
          continue;
        }
        if (lost > 0) {
          this.#sink.missed(lost, 0);
          lost = 0;
        }
        this.#hand(event);
        handed++;
        if (this.#closed) return;
      }
      if (lost > 0) this.#sink.missed(lost, 0);
      if (!waiting) {
        // A long backlog: let the thread's other work run, then go on.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      if (this.#closed) return;
      const wait = Atomics.waitAsync(word, index, published);
      if (wait.async) await wait.value;
    }
  }

  #hand(event: RingEvent): void {
    const kind = MOVE_KINDS[event.kind];
    if (kind === undefined) return;
    const { type, attempt, waitMillis, durationMs, error } = event;
    const jobId = jobIdOf(event.jobNum);
    this.#sink.move(kind, error === undefined ? { jobId, type, attempt, waitMillis, durationMs } : { jobId, type, attempt, waitMillis, durationMs, error }, event.stalled);
  }
}
