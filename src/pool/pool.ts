import { availableParallelism } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { IllegalStateError, InvalidArgumentError, describe } from '../errors.js';
import type { JobQueue } from '../queue.js';
import type { QueueStats } from '../types.js';
import type { PoolQueue } from './backend.js';
import {
  INFLIGHT_JOB_NUM, INFLIGHT_TOKEN, MAX_TIMER_MILLIS, REFUSED, STOP, TICK, allocateControl, inflightAt, threadWord,
  type PoolControlBuffers,
} from './layout.js';
import type { ThreadTask } from './thread.js';

export interface WorkerPoolOptions {
  /** The handler module: a path or URL whose exports map job type → handler (named exports, or a default export object). */
  handlers: string | URL;
  /**
   * Pool threads.
   * @default os.availableParallelism()
   */
  threads?: number;
  /**
   * Lease per poll, in the queue clock's milliseconds. Heartbeats extend it every third of it
   * while the thread is healthy; a thread silent for this long (wall clock) is presumed hung.
   * @default 30000
   */
  leaseMillis?: number;
  /**
   * Jobs at once per thread, for async handlers.
   * @default 1
   */
  concurrency?: number;
  /**
   * Prefix of the worker ids shown in job views; thread i polls as `${workerId}-${i}`.
   * @default 'pool'
   */
  workerId?: string;
}

/** `stats()` of a pool: at once for a JobQueue, a Promise for a queue whose counts are remote (Redis). */
export type PoolStatsOf<Q extends PoolQueue> = Q extends JobQueue ? PoolStats : Promise<PoolStats>;

export interface PoolStats extends QueueStats {
  threads: number;
  /** Pool threads replaced after a crash or a hang. */
  restarts: number;
  /** complete / fail calls refused because the thread had lost the lease (zombies). */
  refused: number;
}

const kDefaults = { leaseMillis: 30_000, concurrency: 1, workerId: 'pool' } as const;
/** How often pool threads tick and the main thread looks for hung ones. */
const TICK_MILLIS = 20;
const DRAIN_POLL_MILLIS = 5;
/**
 * A thread silent for this many leases is terminated. Its job was already
 * retried after one lease; in between, a thread that was only blocked may
 * wake up, and its late complete is refused.
 */
const HANG_LEASES = 2;
/** A thread that died before its first tick (it could not even start) is relaunched after this pause, not at once. */
const RELAUNCH_PAUSE_MILLIS = 250;

interface Loop {
  controller: AbortController;
  /** The thread's TICK when last looked at; launchTick until its first tick. */
  lastTick: number;
  launchTick: number;
  lastChange: number;
  done: Promise<void>;
}

/**
 * A pool of piscina threads that run jobs from a queue — a `JobQueue`
 * (journaled or not) or a `RedisJobQueue`. Each thread opens the queue itself
 * (`share()`'s handle) and polls it; the main thread dispatches nothing per
 * job. Pools in several processes (on several machines, with Redis) may work
 * one queue at once. It only watches: a thread that crashes is replaced, and a
 * thread whose event loop stops turning for `leaseMillis` (a handler that
 * never yields) is terminated and replaced — its job was already retried
 * elsewhere once its lease expired.
 */
export class WorkerPool<Q extends PoolQueue = JobQueue> {
  readonly #queue: Q;
  readonly #handlers: string;
  readonly #threads: number;
  readonly #leaseMillis: number;
  readonly #concurrency: number;
  readonly #workerId: string;
  readonly #control: PoolControlBuffers;
  readonly #words: Int32Array;
  readonly #inflight: Float64Array;
  readonly #loops: (Loop | undefined)[];
  #piscina: Piscina | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  #restarts = 0;
  #state: 'new' | 'starting' | 'running' | 'closing' | 'closed' = 'new';
  #starting: Promise<void> | undefined;

  constructor(queue: Q, options: WorkerPoolOptions) {
    if (queue === null || typeof queue !== 'object' || typeof queue.share !== 'function') {
      throw new InvalidArgumentError(`Expected \`queue\` to be a JobQueue or a RedisJobQueue, got ${describe(queue)}`);
    }
    if (options === null || typeof options !== 'object') {
      throw new InvalidArgumentError(`Expected \`options\` to be an object, got ${describe(options)}`);
    }
    if (queue.share().clock === null) {
      throw new InvalidArgumentError(
        'The queue was made with a TimeSource that cannot cross threads: give it systemClock or a ManualClock to use a WorkerPool',
      );
    }
    this.#queue = queue;
    this.#handlers = moduleUrl(options.handlers);
    this.#threads = positiveInteger('threads', options.threads ?? availableParallelism());
    this.#concurrency = positiveInteger('concurrency', options.concurrency ?? kDefaults.concurrency);
    const leaseMillis = options.leaseMillis ?? kDefaults.leaseMillis;
    if (typeof leaseMillis !== 'number' || !Number.isFinite(leaseMillis) || !(leaseMillis > 0)) {
      throw new InvalidArgumentError(`Expected \`leaseMillis\` to be a finite number > 0, got ${describe(leaseMillis)}`);
    }
    this.#leaseMillis = leaseMillis;
    const workerId = options.workerId ?? kDefaults.workerId;
    if (typeof workerId !== 'string' || workerId.trim() === '') {
      throw new InvalidArgumentError(`Expected \`workerId\` to be a non-blank string, got ${describe(workerId)}`);
    }
    this.#workerId = workerId;
    this.#control = allocateControl(this.#threads, this.#concurrency);
    this.#words = new Int32Array(this.#control.words);
    this.#inflight = new Float64Array(this.#control.inflight);
    this.#loops = new Array<Loop | undefined>(this.#threads).fill(undefined);
  }

  /** Starts the threads. Rejects, and starts nothing, if the handler module does not load. */
  start(): Promise<void> {
    if (this.#state !== 'new') return Promise.reject(new IllegalStateError(`The pool was already started or closed`));
    this.#state = 'starting';
    this.#starting = this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    const piscina = new Piscina<ThreadTask, string[]>({
      filename: new URL('./thread.js', import.meta.url).href,
      minThreads: this.#threads,
      maxThreads: this.#threads,
      idleTimeout: Infinity,
    });
    try {
      await piscina.run({ kind: 'probe', handlers: this.#handlers });
    } catch (error) {
      this.#state = 'closed';
      await piscina.destroy();
      throw new InvalidArgumentError(`The handler module ${this.#handlers} did not load: ${(error as Error).message}`);
    }
    this.#piscina = piscina;
    // close() was called while the module loaded: it waits for us, then finds no threads to stop.
    if (this.#state !== 'starting') return;
    this.#state = 'running';
    for (let thread = 0; thread < this.#threads; thread++) this.#launch(thread);
    this.#watchdog = setInterval(() => this.#watch(), TICK_MILLIS);
    this.#watchdog.unref();
  }

  /** Resolves once no job is PENDING or RUNNING. */
  async drain(): Promise<void> {
    for (let s = await this.#queue.stats(); s.pending + s.running > 0; s = await this.#queue.stats()) {
      if (this.#state !== 'running') throw new IllegalStateError('The pool is not running: nothing would drain the queue');
      await new Promise((r) => setTimeout(r, DRAIN_POLL_MILLIS));
    }
  }

  /**
   * Stops polling and lets running jobs finish (their signals are aborted, so
   * cooperative handlers may stop early; their jobs then retry). Jobs of a
   * thread that does not finish within `leaseMillis` are handed back to the
   * queue as failed attempts, and the thread is terminated. Nothing is lost.
   */
  async close(): Promise<void> {
    if (this.#state === 'closed' || this.#state === 'closing') return;
    const wasStarting = this.#state === 'starting';
    this.#state = 'closing';
    if (wasStarting) await this.#starting!.catch(() => undefined);
    if (this.#piscina === undefined) {
      this.#state = 'closed';
      return;
    }
    Atomics.store(this.#words, STOP, 1);
    const finished = Promise.allSettled(this.#loops.map((loop) => loop?.done));
    const grace = Math.min(MAX_TIMER_MILLIS, Math.max(this.#leaseMillis, 1000));
    const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), grace).unref());
    if ((await Promise.race([finished, timer])) === 'late') {
      for (let thread = 0; thread < this.#threads; thread++) this.#handBack(thread, 'the pool closed before the job finished');
    }
    clearInterval(this.#watchdog);
    await this.#piscina!.destroy();
    this.#state = 'closed';
  }

  stats(): PoolStatsOf<Q> {
    let refused = 0;
    for (let thread = 0; thread < this.#threads; thread++) refused += Atomics.load(this.#words, threadWord(thread, REFUSED));
    const pool = { threads: this.#threads, restarts: this.#restarts, refused };
    const queue = this.#queue.stats();
    return (queue instanceof Promise ? queue.then((counts) => ({ ...counts, ...pool })) : { ...queue, ...pool }) as PoolStatsOf<Q>;
  }

  #launch(thread: number): void {
    const controller = new AbortController();
    const now = performance.now();
    const task: ThreadTask = {
      kind: 'loop',
      handlers: this.#handlers,
      queue: this.#queue.share(),
      control: this.#control,
      thread,
      workerId: `${this.#workerId}-${thread}`,
      leaseMillis: this.#leaseMillis,
      concurrency: this.#concurrency,
      tickMillis: TICK_MILLIS,
    };
    const tick = Atomics.load(this.#words, threadWord(thread, TICK));
    const done = this.#piscina!.run(task, { signal: controller.signal }).then(
      () => undefined,
      () => this.#replace(thread),
    );
    this.#loops[thread] = { controller, lastTick: tick, launchTick: tick, lastChange: now, done };
  }

  /** A loop ended by a crash (or our abort of a hung thread): hand its jobs back and start a new one. */
  async #replace(thread: number): Promise<void> {
    this.#handBack(thread, 'the worker thread died while running the job');
    if (this.#state !== 'running') return;
    this.#restarts++;
    // A thread that died before it ever ticked could not start at all: do not relaunch it in a tight loop.
    const loop = this.#loops[thread]!;
    if (Atomics.load(this.#words, threadWord(thread, TICK)) === loop.launchTick) {
      await new Promise((r) => setTimeout(r, RELAUNCH_PAUSE_MILLIS));
      if (this.#state !== 'running') return;
    }
    this.#launch(thread);
  }

  /** Fails the jobs a dead or hung thread held, so they retry now rather than when their leases expire. */
  #handBack(thread: number, reason: string): void {
    for (let place = 0; place < this.#concurrency; place++) {
      const at = inflightAt(thread, this.#concurrency, place);
      const jobNum = this.#inflight[at + INFLIGHT_JOB_NUM]!;
      if (jobNum === 0) continue;
      this.#inflight[at + INFLIGHT_JOB_NUM] = 0;
      // A refusal means the lease had already ended (expired, or the thread settled it): nothing to hand back.
      const handBack = async () => this.#queue.fail(`J${jobNum}`, this.#inflight[at + INFLIGHT_TOKEN]!, reason);
      handBack().catch(() => undefined);
    }
  }

  /** Terminates threads whose event loop has not turned for HANG_LEASES leases. */
  #watch(): void {
    const now = performance.now();
    const silence = Math.max(HANG_LEASES * this.#leaseMillis, 10 * TICK_MILLIS);
    for (let thread = 0; thread < this.#threads; thread++) {
      const loop = this.#loops[thread];
      if (loop === undefined) continue;
      const tick = Atomics.load(this.#words, threadWord(thread, TICK));
      if (tick !== loop.lastTick) {
        loop.lastTick = tick;
        loop.lastChange = now;
      } else if (tick !== loop.launchTick && now - loop.lastChange > silence) {
        // (A thread that has not ticked yet is still starting: importing modules is not hanging.)
        loop.lastChange = Infinity; // abort once; the replacement comes through #replace
        loop.controller.abort();
      }
    }
  }
}

function positiveInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || !(value >= 1)) {
    throw new InvalidArgumentError(`Expected \`${name}\` to be an integer >= 1, got ${describe(value)}`);
  }
  return value;
}

function moduleUrl(handlers: unknown): string {
  if (handlers instanceof URL) return handlers.href;
  if (typeof handlers !== 'string' || handlers.trim() === '') {
    throw new InvalidArgumentError(`Expected \`handlers\` to be a module path or URL, got ${describe(handlers)}`);
  }
  if (/^(file|data):/.test(handlers)) return handlers;
  return pathToFileURL(isAbsolute(handlers) ? handlers : resolve(handlers)).href;
}
