/**
 * The pool's events, without a message per job: each pool thread records
 * what its jobs did as numbers in a Float64Array and posts the array (moved,
 * not copied) to the main thread once per tick or once it is full; the main
 * thread decodes a batch into events for its listeners and its logger. A
 * thread records nothing while no one listens (the control block's EVENTS word).
 *
 * A record is RECORD_FIELDS numbers: [ KIND | JOB_NUM | TYPE | ATTEMPT | DURATION | ERROR ].
 * TYPE indexes the thread's job types, each sent once, in the batch that first
 * names it; ERROR is 1 when the record's error text is next in the batch's
 * `errors`, else 0. Events a thread recorded in the tick before it crashed are lost.
 */
import { EventEmitter } from 'node:events';
import type { MessagePort } from 'node:worker_threads';
import { InvalidArgumentError, describe } from '../errors.js';
import { jobIdOf } from '../job-id.js';
import type { Lease } from '../types.js';
import { parseJobId } from '../validate/job-id.js';

/** What one attempt of a job did. */
export interface JobEvent {
  readonly jobId: string;
  readonly type: string;
  readonly attempt: number;
  /** How long the job waited for this attempt's lease, in ms of the queue's clock (the Lease's `waitMillis`). */
  readonly waitMillis: number;
  /** How long the attempt ran, wall clock. */
  readonly durationMs: number;
  /** Why it failed, was refused or stalled. */
  readonly error?: string;
}

/** A running job's `ctx.progress(value)`: the last value reported since the previous event of that job. */
export interface ProgressEvent {
  readonly jobId: string;
  readonly attempt: number;
  /** Kept as a float32: 7 significant digits. */
  readonly progress: number;
}

/** A pool thread that died or hung and was replaced, or a queue call of the pool that failed. */
export interface PoolErrorEvent {
  readonly thread: number;
  readonly error: string;
}

/**
 * completed: the handler returned and the job is SUCCEEDED.
 * failed: an attempt failed (the handler threw, timed out, the job's type is unknown, or its
 *   thread died or hung); `retrying` or `dead` follows with the same event.
 * retrying: the failed job will run again after its backoff. dead: it was dead-lettered.
 * stalled: an attempt lost its lease: a heartbeat found it expired, or its thread died or hung.
 * refused: the queue refused a complete or fail because the lease had been lost (a zombie).
 * cancelled: the job was cancelled while it ran (`cancel(jobId)`): its handler's signal aborted, and
 *   what it returned or threw once it ended was refused; `error` says so. Once per attempt, as it ends.
 * progress: a running job reported progress (`ctx.progress`): at most once per job per tick (20 ms), with the
 *   last value reported; reports in between are not told one by one.
 * error: see PoolErrorEvent.
 */
export interface PoolEvents {
  completed: JobEvent;
  failed: JobEvent;
  retrying: JobEvent;
  dead: JobEvent;
  stalled: JobEvent;
  refused: JobEvent;
  cancelled: JobEvent;
  progress: ProgressEvent;
  error: PoolErrorEvent;
}
export type PoolEventName = keyof PoolEvents;
const EVENT_NAMES: readonly string[] = ['completed', 'failed', 'retrying', 'dead', 'stalled', 'refused', 'cancelled', 'progress', 'error'] satisfies PoolEventName[];

/** pino's method shape: `logger.warn({ jobId, ... }, 'message')`. */
export interface PoolLogger {
  info(fields: object, message?: string): void;
  warn(fields: object, message?: string): void;
  error(fields: object, message?: string): void;
}

/** The kinds a thread records; `failed` is implied by retrying and dead. */
export const enum EventKind {
  Completed = 0,
  Retrying = 1,
  Dead = 2,
  Stalled = 3,
  Refused = 4,
  Cancelled = 5,
}
const NAME_OF_KIND = ['completed', 'retrying', 'dead', 'stalled', 'refused', 'cancelled'] as const;

const KIND = 0;
const JOB_NUM = 1;
const TYPE = 2;
const ATTEMPT = 3;
const DURATION = 4;
const ERROR = 5;
const WAIT = 6;
const RECORD_FIELDS = 7;
/** Records per batch at most: a batch is posted when full, else once per tick. */
const BATCH_RECORDS = 1024;

export interface EventBatch {
  records: Float64Array<ArrayBuffer>;
  count: number;
  newTypes: string[];
  errors: string[];
  /** Handlers' log lines (`ctx.log`), as pairs: job id, line. Sent whether or not anyone listens to events. */
  logs: string[];
}

/** Log lines per batch at most (`ctx.log`): a batch is posted when it has this many, else once per tick. */
const BATCH_LOG_LINES = 1024;

/** A pool thread's side: records events into the batch it posts next. */
export class EventRecorder {
  readonly #port: MessagePort;
  readonly #wanted: () => boolean;
  readonly #counted: () => void;
  readonly #types = new Map<string, number>();
  #batch: EventBatch = emptyBatch();

  /** `counted` is called once per record, as it is recorded (the RECORDED word: see layout.ts). */
  constructor(port: MessagePort, wanted: () => boolean, counted: () => void) {
    this.#port = port;
    this.#wanted = wanted;
    this.#counted = counted;
  }

  record(kind: EventKind, lease: Lease, durationMs: number, error?: string): void {
    const { jobId, type, attempt, waitMillis } = lease;
    if (!this.#wanted()) return;
    const batch = this.#batch;
    let typeIndex = this.#types.get(type);
    if (typeIndex === undefined) {
      typeIndex = this.#types.size;
      this.#types.set(type, typeIndex);
      batch.newTypes.push(type);
    }
    const at = batch.count++ * RECORD_FIELDS;
    const records = batch.records;
    records[at + KIND] = kind;
    records[at + JOB_NUM] = parseJobId(jobId);
    records[at + TYPE] = typeIndex;
    records[at + ATTEMPT] = attempt;
    records[at + DURATION] = durationMs;
    records[at + WAIT] = waitMillis;
    records[at + ERROR] = error === undefined ? 0 : 1;
    if (error !== undefined) batch.errors.push(error);
    this.#counted();
    if (batch.count === BATCH_RECORDS) this.flush();
  }

  /** A handler's log line for job `jobId`, sent to the main thread with the next batch. */
  log(jobId: string, line: string): void {
    const logs = this.#batch.logs;
    logs.push(jobId, line);
    if (logs.length === 2 * BATCH_LOG_LINES) this.flush();
  }

  /** Posts what was recorded since the last batch, if anything. */
  flush(): void {
    const batch = this.#batch;
    if (batch.count === 0 && batch.newTypes.length === 0 && batch.logs.length === 0) return;
    this.#batch = emptyBatch();
    this.#port.postMessage(batch, [batch.records.buffer]);
  }
}

function emptyBatch(): EventBatch {
  return { records: new Float64Array(BATCH_RECORDS * RECORD_FIELDS), count: 0, newTypes: [], errors: [], logs: [] };
}

/**
 * The main thread's side: listeners and the logger, fed by every thread's
 * batches and by the pool itself (stalls it handles, thread restarts).
 */
export class EventHub {
  readonly #emitter = new EventEmitter();
  readonly #logger: PoolLogger | undefined;
  readonly #onWantedChange: (wanted: boolean) => void;

  constructor(logger: PoolLogger | undefined, onWantedChange: (wanted: boolean) => void) {
    this.#logger = logger;
    this.#onWantedChange = onWantedChange;
    // 'error' is a plain event here, not EventEmitter's throw-if-unheard.
    this.#emitter.on('error', () => undefined);
    onWantedChange(this.wanted);
  }

  /** Whether anyone hears events: then threads record them. */
  get wanted(): boolean {
    return this.#logger !== undefined || this.#emitter.eventNames().some((name) => this.#listeners(name as PoolEventName) > 0);
  }

  on<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): void {
    if (!EVENT_NAMES.includes(name)) {
      throw new InvalidArgumentError(`Expected an event name (${EVENT_NAMES.join(', ')}), got ${describe(name)}`);
    }
    if (typeof listener !== 'function') throw new InvalidArgumentError(`Expected \`listener\` to be a function, got ${describe(listener)}`);
    this.#emitter.on(name, listener);
    this.#onWantedChange(this.wanted);
  }

  off<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): void {
    this.#emitter.off(name, listener);
    this.#onWantedChange(this.wanted);
  }

  /** A decoder for one thread's batches (each thread numbers its job types itself). */
  receiver(): (batch: EventBatch) => void {
    const types: string[] = [];
    return (batch) => {
      types.push(...batch.newTypes);
      const { records, errors } = batch;
      let nextError = 0;
      for (let i = 0; i < batch.count; i++) {
        const at = i * RECORD_FIELDS;
        const error = records[at + ERROR] === 1 ? errors[nextError++] : undefined;
        const kind = records[at + KIND] as EventKind;
        if (!this.#heard(kind)) continue;
        const jobId = jobIdOf(records[at + JOB_NUM]!);
        const type = types[records[at + TYPE]!]!;
        const attempt = records[at + ATTEMPT]!;
        const durationMs = records[at + DURATION]!;
        const waitMillis = records[at + WAIT]!;
        // Two literals rather than a spread of `{ error }` into one, which V8 copies on a slower path (~5 ns an event).
        this.job(kind, error === undefined ? { jobId, type, attempt, waitMillis, durationMs } : { jobId, type, attempt, waitMillis, durationMs, error });
      }
    };
  }

  /** Emits a job's event (with `failed` first for retrying and dead) and logs it. */
  job(kind: EventKind, event: JobEvent): void {
    const name = NAME_OF_KIND[kind];
    if (kind === EventKind.Retrying || kind === EventKind.Dead) this.#emitter.emit('failed', event);
    this.#emitter.emit(name, event);
    const logger = this.#logger;
    if (logger === undefined) return;
    if (kind === EventKind.Retrying) logger.warn({ ...event }, 'job failed; it will be retried');
    else if (kind === EventKind.Dead) logger.error({ ...event }, 'job dead-lettered');
    else if (kind === EventKind.Stalled) logger.warn({ ...event }, 'job lost its lease');
    else if (kind === EventKind.Refused) logger.warn({ ...event }, 'late complete or fail refused: the lease was lost');
    else if (kind === EventKind.Cancelled) logger.info({ ...event }, 'job cancelled while it ran');
  }

  /** Whether anyone listens to `progress` (the pool's main thread makes those events only then). */
  get progressHeard(): boolean {
    return this.#emitter.listenerCount('progress') > 0;
  }

  progress(event: ProgressEvent): void {
    this.#emitter.emit('progress', event);
  }

  /** A thread that died or hung, and was replaced (`replaced`) or not (the pool is closing). */
  threadLost(event: PoolErrorEvent, replaced: boolean): void {
    this.#emitter.emit('error', event);
    this.#logger?.warn({ ...event }, replaced ? 'pool thread replaced' : 'pool thread lost while closing');
  }

  #heard(kind: EventKind): boolean {
    if (this.#logger !== undefined && kind !== EventKind.Completed) return true;
    const name = NAME_OF_KIND[kind];
    return this.#listeners(name) > 0 || ((kind === EventKind.Retrying || kind === EventKind.Dead) && this.#listeners('failed') > 0);
  }

  #listeners(name: PoolEventName): number {
    // Our own no-op 'error' listener does not count.
    return this.#emitter.listenerCount(name) - (name === 'error' ? 1 : 0);
  }
}
