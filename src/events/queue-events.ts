/**
 * A subscription to a queue's moves, whoever made them (any thread, any
 * process, a WorkerPool or plain poll / complete callers): `queue.events()`.
 * The events have the pool's shapes (PoolEvents); where they come from is a
 * source per backend, each feeding this one front through EventSink:
 *
 *   Redis, partitioned Redis: the queue's event stream, one per partition (src/redis/events.ts)
 *   in memory, journal: a ring of event records in shared memory (src/shm/tables/event-ring.ts)
 *
 * A subscriber that falls behind the bounded stream or ring is told how many
 * events it missed (`missed`), never left to guess.
 */
import { EventEmitter } from 'node:events';
import { InvalidArgumentError, describe } from '../errors.js';
import type { JobEvent, PoolEvents } from '../pool/events.js';

/** How many events a subscriber lost because the stream or ring was trimmed past them before it read them. */
export interface MissedEvent {
  /**
   * How many; Infinity when not known: on Redis, the queue's events had gone off (no subscriber
   * renewed them for a minute, or they were disabled) and moves made then were not recorded.
   */
  readonly count: number;
  /** The partition whose stream lost them (a partitioned queue's; 0 otherwise). */
  readonly partition: number;
}

/** A source that failed (a Redis connection lost while reading: it reads again once the connection is back). */
export interface QueueEventsError {
  readonly error: unknown;
}

/** The job events a queue's moves make: the pool's own, by the pool's names (see PoolEvents). */
export type QueueJobEventName = 'completed' | 'failed' | 'retrying' | 'dead' | 'stalled' | 'cancelled';

/**
 * completed, failed, retrying, dead, stalled, cancelled: as the pool's (PoolEvents), for every job of the queue.
 * failed comes before retrying or dead; stalled (a lease that ran out) before those.
 * cancelled: any cancel, of a PENDING job as of a RUNNING one.
 * missed: see MissedEvent. error: see QueueEventsError.
 */
export interface QueueEventMap extends Pick<PoolEvents, QueueJobEventName> {
  missed: MissedEvent;
  error: QueueEventsError;
}
export type QueueEventName = keyof QueueEventMap;

/** Every event name a subscription takes, in one place (a new kind of event is added here and in MOVE_KINDS). */
export const QUEUE_EVENT_NAMES: readonly QueueEventName[] = ['completed', 'failed', 'retrying', 'dead', 'stalled', 'cancelled', 'missed', 'error'];

/** The moves a source reports, by the number the shared ring stores (the Redis stream stores the name). */
export const MOVE_KINDS = ['completed', 'retrying', 'dead', 'cancelled'] as const;
export type MoveKind = (typeof MOVE_KINDS)[number];

/** What a source hands its subscription. */
export interface EventSink {
  /** A move of a job: `stalled` when a failed attempt's lease ran out. */
  move(kind: MoveKind, event: JobEvent, stalled: boolean): void;
  missed(count: number, partition: number): void;
  failed(error: unknown): void;
}

/** One backend's feed of events: where it is (to resume from), and how it stops. */
export interface EventSource {
  /** An opaque text: where this source has read up to. */
  position(): string;
  close(): Promise<void>;
}

/**
 * A subscription: listeners by event name (`on`, `off`) and `close()`, which
 * stops reading and releases what it holds (a Redis connection, a waiter on
 * the ring). Listeners run on the subscriber's own thread, in the order the
 * moves were made for each job (and for each partition, across jobs).
 */
export class QueueEvents {
  readonly #emitter = new EventEmitter();
  #sources: readonly EventSource[] = [];
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly #onClose: () => void;

  /** leasehold's: a queue's `events()` makes it. */
  constructor(onClose: () => void = () => undefined) {
    this.#onClose = onClose;
    // 'error' is a plain event here, not EventEmitter's throw-if-unheard.
    this.#emitter.on('error', () => undefined);
  }

  /** leasehold's: the sources that feed this subscription, once they are open. */
  feedFrom(sources: readonly EventSource[]): void {
    this.#sources = sources;
  }

  /** What each source's events go to. */
  readonly sink: EventSink = {
    move: (kind, event, stalled) => {
      if (stalled) this.#emit('stalled', event);
      if (kind === 'retrying' || kind === 'dead') this.#emit('failed', event);
      this.#emit(kind, event);
    },
    missed: (count, partition) => this.#emit('missed', { count, partition } satisfies MissedEvent),
    failed: (error) => this.#emit('error', { error } satisfies QueueEventsError),
  };

  /**
   * Emits to the listeners; a listener that throws is thrown as an uncaught exception, as an
   * EventEmitter's would be, while the source reads on (its loop must not end with it).
   */
  #emit<E extends QueueEventName>(name: E, event: QueueEventMap[E]): void {
    if (this.#closed) return;
    try {
      this.#emitter.emit(name, event);
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  on<E extends QueueEventName>(name: E, listener: (event: QueueEventMap[E]) => void): this {
    if (!QUEUE_EVENT_NAMES.includes(name)) {
      throw new InvalidArgumentError(`Expected an event name (${QUEUE_EVENT_NAMES.join(', ')}), got ${describe(name)}`);
    }
    if (typeof listener !== 'function') throw new InvalidArgumentError(`Expected \`listener\` to be a function, got ${describe(listener)}`);
    this.#emitter.on(name, listener);
    return this;
  }

  off<E extends QueueEventName>(name: E, listener: (event: QueueEventMap[E]) => void): this {
    this.#emitter.off(name, listener);
    return this;
  }

  /**
   * Where this subscription has read up to: pass it as `after` to a new
   * subscription of the same queue (after a restart, say) to hear of every move
   * since, or of how many were missed if the bound trimmed them meanwhile.
   */
  get position(): string {
    return this.#sources.map((source) => source.position()).join(',');
  }

  /** Stops reading; no listener runs after it resolves. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      this.#onClose();
      await Promise.all(this.#sources.map((source) => source.close()));
      this.#emitter.removeAllListeners();
    })();
    return this.#closing;
  }
}

/** The options of `events()`. */
export interface QueueEventsOptions {
  /**
   * Resume after this `position` of an earlier subscription of the same queue.
   * Without it, the subscription hears of every move made after `events()` returned (resolved).
   */
  after?: string;
  /**
   * Redis: the bound of the queue's event stream (XADD MAXLEN ~ this), set on the queue as the
   * subscription opens (the latest subscriber's bound holds).
   * @default 10000
   */
  maxLen?: number;
}

export const DEFAULT_EVENTS_MAX_LEN = 10_000;
const EVENTS_OPTIONS: ReadonlySet<string> = new Set(['after', 'maxLen']);

/** The options, checked: `after` split into one position per source (`parts` of them). */
export function checkEventsOptions(options: unknown, parts: number): { after: readonly string[] | undefined; maxLen: number } {
  if (options === undefined) return { after: undefined, maxLen: DEFAULT_EVENTS_MAX_LEN };
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(`Expected \`options\` to be an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!EVENTS_OPTIONS.has(key)) throw new InvalidArgumentError(`Unknown events option ${describe(key)}: expected one of ${[...EVENTS_OPTIONS].join(', ')}`);
  }
  const { after, maxLen = DEFAULT_EVENTS_MAX_LEN } = options as QueueEventsOptions;
  if (!Number.isInteger(maxLen) || !(maxLen >= 1)) throw new InvalidArgumentError(`Expected \`maxLen\` to be an integer >= 1, got ${describe(maxLen)}`);
  if (after === undefined) return { after: undefined, maxLen };
  const positions = typeof after === 'string' ? after.split(',') : [];
  if (positions.length !== parts || positions.some((position) => !/^\d+-\d+\/\d+$|^\d+$/.test(position))) {
    throw new InvalidArgumentError(`Expected \`after\` to be a subscription's \`position\` of this queue, got ${describe(after)}`);
  }
  return { after: positions, maxLen };
}
