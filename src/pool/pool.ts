import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { IllegalStateError, InvalidArgumentError, describe, thrownText } from '../errors.js';
import type { JobQueue } from '../queue.js';
import { JobStatus, type Payload, type QueueStats } from '../types.js';
import type { PoolQueue } from './backend.js';
import { EventHub, EventKind, type EventBatch, type PoolEventName, type PoolEvents } from './events.js';
import { ProgressWatch, type ProgressReport } from './progress-watch.js';
import {
  EVENTS, INFLIGHT_ATTEMPT, INFLIGHT_DEADLINE, INFLIGHT_JOB_NUM, INFLIGHT_STARTED_AT, INFLIGHT_TIMEOUT, INFLIGHT_TOKEN, INFLIGHT_WAIT,
  RECORDED, RECYCLE, RECYCLE_HEARD, RECYCLING, REFUSED, RETIRE, STARTED, STOP, TICK, WORKING, allocateControl, inflightAt, threadWord, type PoolControlBuffers,
} from './layout.js';
import { MAX_TIMER_MILLIS } from '../long-timer.js';
import { fillPoolOptions, type FilledPoolOptions, type WorkerPoolOptions } from './options.js';
import type { ThreadTask } from './thread.js';
import { jobIdOf } from '../job-id.js';
import { handlerModuleError } from './module-error.js';
import type { SubmitOptions } from '../validate/job-input.js';

/** `run`'s options: submit's, and a signal that stops the wait (the job itself is left as it is). */
export interface RunOptions extends SubmitOptions {
  /** Rejects `run` with AbortedError once it aborts; the job goes on (cancel it with the queue's `cancel`, PENDING or RUNNING). */
  signal?: AbortSignal;
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

/** How often pool threads tick and the main thread looks for hung ones. */
const TICK_MILLIS = 20;
/**
 * drain() looks every DRAIN_POLL_MILLIS, but asks the queue (`stats()`) only
 * when none of this pool's threads holds a lease, or DRAIN_LOOK_MILLIS after
 * it last asked: a job a thread holds is RUNNING, so the queue cannot be
 * drained yet. A shared-memory queue's stats() takes its lock and first waits
 * for the lock-free calls in flight; on a busy machine the thread inside one
 * may be waiting for a core, and every other thread waits for the lock
 * meanwhile (about 1 ms, on half of the looks of a 2-thread drain here: a
 * tenth of its time).
 */
const DRAIN_POLL_MILLIS = 5;
const DRAIN_LOOK_MILLIS = 100;
/**
 * A thread silent for this many leases is terminated. Its job was already
 * retried after one lease; in between, a thread that was only blocked may
 * wake up, and its late complete is refused.
 */
const HANG_LEASES = 2;
/** A thread past a job's timeout and grace is terminated once it has also not ticked for this many ticks (it does not yield). */
const TIMEOUT_SILENT_TICKS = 5;
/**
 * A thread that died holding no job is relaunched after this pause, not at
 * once, and each such death in a row doubles it, up to MAX_RELAUNCH_PAUSE_MILLIS.
 */
const RELAUNCH_PAUSE_MILLIS = 250;
const MAX_RELAUNCH_PAUSE_MILLIS = 5_000;
/** A thread that ran this long before it died starts its count of deaths in a row afresh. */
const LIVED_MILLIS = 10_000;

const THREAD_DIED = 'the worker thread died while running the job';
const THREAD_DIED_IDLE = 'the worker thread died while it held no job';
const HUNG = 'the worker thread stopped responding (its event loop did not turn) and was terminated';
const OUT_OF_MEMORY = 'the worker thread ran out of memory (ERR_WORKER_OUT_OF_MEMORY) while running the job';

interface Loop {
  controller: AbortController;
  /** The thread's TICK when last looked at; launchTick until its first tick. */
  lastTick: number;
  launchTick: number;
  lastChange: number;
  /** performance.now() at its launch. */
  launchedAt: number;
  /** Deaths in a row holding no job before this launch (see #replace). */
  idleDeaths: number;
  done: Promise<void>;
  /** The thread's STARTED when last looked at, and when it last started a job or held one (performance.now()). */
  lastStarted: number;
  lastBusy: number;
  /** Retired (idle above minThreads): its loop ends, and no successor is launched. */
  retired: boolean;
}

/**
 * A pool of piscina threads that run jobs from a queue — a `JobQueue`
 * (journaled or not) or a `RedisJobQueue`. Each thread opens the queue itself
 * (`share()`'s handle) and polls it; the main thread dispatches nothing per
 * job, and hears of what the jobs did in batches (`on`). Pools in several
 * processes (on several machines, with Redis) may work one queue at once. The
 * main thread only watches: a thread that crashes or runs out of memory is
 * replaced, and a thread whose event loop stops turning for `leaseMillis` (a
 * handler that never yields), or past a job's timeout, is terminated and
 * replaced — its job was already retried elsewhere once its lease expired,
 * or is failed as timed out.
 */
export class WorkerPool<Q extends PoolQueue = JobQueue> {
  readonly #queue: Q;
  readonly #options: FilledPoolOptions;
  readonly #control: PoolControlBuffers;
  readonly #words: Int32Array;
  readonly #inflight: Float64Array;
  readonly #loops: (Loop | undefined)[];
  /** Per thread: the event records received from it, or given up as lost with a thread that died (see RECORDED). */
  readonly #received: number[];
  readonly #events: EventHub;
  readonly #progress: ProgressWatch;
  readonly #onSignal = (): void => void this.close();
  #piscina: Piscina | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  #restarts = 0;
  #state: 'new' | 'starting' | 'running' | 'closing' | 'closed' = 'new';
  #starting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(queue: Q, options: WorkerPoolOptions) {
    if (queue === null || typeof queue !== 'object' || typeof queue.share !== 'function') {
      throw new InvalidArgumentError(`Expected \`queue\` to be a JobQueue, a RedisJobQueue or a PartitionedRedisQueue, got ${describe(queue)}`);
    }
    this.#options = fillPoolOptions(options);
    const handle = queue.share();
    if (handle.clock === null) {
      throw new InvalidArgumentError(
        'The queue was made with a TimeSource that cannot cross threads: give it systemClock or a ManualClock to use a WorkerPool',
      );
    }
    this.#queue = queue;
    this.#control = allocateControl(this.#options.threads, this.#options.concurrency);
    this.#words = new Int32Array(this.#control.words);
    this.#inflight = new Float64Array(this.#control.inflight);
    this.#loops = new Array<Loop | undefined>(this.#options.threads).fill(undefined);
    this.#received = new Array<number>(this.#options.threads).fill(0);
    // Publish to the threads whether anyone listens: they record events only then.
    this.#events = new EventHub(this.#options.logger, (wanted) => Atomics.store(this.#words, EVENTS, wanted ? 1 : 0));
    this.#progress = new ProgressWatch(queue, this.#inflight, this.#control.progress, this.#options.threads, this.#options.concurrency, this.#options.leaseMillis);
  }

  /** Starts the threads. Rejects, and starts nothing, if the handler module does not load. */
  start(): Promise<void> {
    if (this.#state !== 'new') return Promise.reject(new IllegalStateError(`The pool was already started or closed`));
    this.#state = 'starting';
    for (const signal of this.#options.shutdownOn) process.on(signal, this.#onSignal);
    this.#starting = this.#start();
    return this.#starting;
  }

  /**
   * Listens to what the pool's jobs do (see PoolEvents). Events reach the main
   * thread in batches, within a tick (20 ms) of happening: a thread's events in
   * the order they happened. Two threads' batches are not ordered, except that
   * a thread posts a retrying attempt's events at once, before the retry can
   * run elsewhere; still, a main thread that takes both threads' messages in
   * one turn may tell a job's second `failed` before its first (each event
   * names its `attempt`).
   */
  on<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): this {
    this.#events.on(name, listener);
    return this;
  }

  off<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): this {
    this.#events.off(name, listener);
    return this;
  }

  async #start(): Promise<void> {
    const { threads, handlers, resourceLimits } = this.#options;
    const { minThreads, idleTimeoutMillis } = this.#options;
    const piscina = new Piscina<ThreadTask, string[]>({
      filename: new URL('./thread-entry.cjs', import.meta.url).href,
      // A retired loop leaves its thread idle in piscina, which ends it after the same idle timeout.
      minThreads,
      maxThreads: threads,
      idleTimeout: minThreads === threads ? Infinity : idleTimeoutMillis,
      ...(resourceLimits === undefined ? {} : { resourceLimits }),
    });
    // Every thread, from its start: one that crashes or is killed as hung cannot give its queue rows back itself.
    piscina.on('workerCreate', (created: { id: number }) => this.#onExit(piscina, created.id));
    try {
      await piscina.run({ kind: 'probe', handlers });
    } catch (error) {
      this.#state = 'closed';
      this.#stopListening();
      await piscina.destroy();
      throw await handlerModuleError(handlers, error);
    }
    this.#piscina = piscina;
    // close() was called while the module loaded: it waits for us, then finds no threads to stop.
    if (this.#state !== 'starting') return;
    this.#state = 'running';
    for (let thread = 0; thread < minThreads; thread++) this.#launch(thread);
    this.#watchdog = setInterval(() => this.#watch(), TICK_MILLIS);
    this.#watchdog.unref();
  }

  /**
   * Resolves once no job is PENDING or RUNNING, and every event this pool's
   * threads recorded for the jobs it waited for has reached the listeners
   * (a thread posts its events once per tick, after the queue has the job
   * finished: without that wait a count of `completed` events read right
   * after could be short).
   */
  async drain(): Promise<void> {
    for (let asked = -Infinity; ; ) {
      if (!this.#holdsLeases() || performance.now() - asked >= DRAIN_LOOK_MILLIS) {
        asked = performance.now();
        const s = await this.#queue.stats();
        if (s.pending + s.running === 0) break;
      }
      if (this.#state !== 'running') throw new IllegalStateError('The pool is not running: nothing would drain the queue');
      await new Promise((r) => setTimeout(r, DRAIN_POLL_MILLIS));
    }
    // A thread records a job's event before the job leaves its inflight block: once no thread holds a job, every event
    // of the drained jobs is counted in RECORDED, and arrives with the thread's next batch (its next tick at most).
    while (this.#state === 'running' && (this.#holdsLeases() || !this.#heardAll())) {
      await new Promise((r) => setTimeout(r, DRAIN_POLL_MILLIS));
    }
  }

  /** Whether every event record the threads counted has been received (or was lost with a thread that died). */
  #heardAll(): boolean {
    for (let thread = 0; thread < this.#options.threads; thread++) {
      if (this.#received[thread]! < Atomics.load(this.#words, threadWord(thread, RECORDED))) return false;
    }
    return true;
  }

  /**
   * Submits a job and resolves with its handler's return value once it has
   * SUCCEEDED (undefined for none) — piscina's `run`, through the queue:
   * the job is retried by the queue's policy and survives as the queue does.
   * Rejects with JobFailedError (`ERR_JOB_FAILED`; `lastError` is the last
   * attempt's error) once it is DEAD or CANCELLED, with AbortedError when
   * `options.signal` aborts, with what `submit` throws for a refused submit
   * (nothing submitted), and with IllegalStateError when the pool is not
   * started or already closing (nothing submitted: no thread would run it).
   */
  async run(type: string, payload?: Payload | null, options: RunOptions = {}): Promise<unknown> {
    if (this.#state !== 'running' && this.#state !== 'starting') {
      throw new IllegalStateError(`The pool is ${this.#state === 'new' ? 'not started' : 'closing or closed'}: no thread would run the job (start() it first)`);
    }
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError(`Expected \`options\` to be an object, got ${describe(options)}`);
    const { signal, ...submitOptions } = options;
    const jobId = await this.#queue.submit(type, payload, submitOptions);
    return this.#queue.finished(jobId, signal === undefined ? {} : { signal });
  }

  /** Whether a thread of this pool holds a lease now (a hint: the owning threads write the control block as they go). */
  #holdsLeases(): boolean {
    const { threads, concurrency } = this.#options;
    for (let thread = 0; thread < threads; thread++) {
      for (let place = 0; place < concurrency; place++) if (this.#inflight[inflightAt(thread, concurrency, place) + INFLIGHT_JOB_NUM] !== 0) return true;
    }
    return false;
  }

  /**
   * Stops polling and lets running jobs finish; their signals are aborted, so
   * cooperative handlers may stop early. A shutdown is not a failure: a job
   * whose handler stops (throws) on that abort, or that does not finish within
   * `leaseMillis` (at least a second), is handed back PENDING and ready, its
   * interrupted attempt not counted; then the threads are terminated. Nothing
   * is lost. Every call returns the same Promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#stopListening();
    const wasStarting = this.#state === 'starting';
    this.#state = 'closing';
    if (wasStarting) await this.#starting!.catch(() => undefined);
    if (this.#piscina === undefined) {
      this.#state = 'closed';
      return;
    }
    Atomics.store(this.#words, STOP, 1);
    const finished = Promise.allSettled(this.#loops.map((loop) => loop?.done));
    const grace = Math.min(MAX_TIMER_MILLIS, Math.max(this.#options.leaseMillis, 1000));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), grace);
    });
    if ((await Promise.race([finished, late])) === 'late') {
      const releases = [];
      for (let thread = 0; thread < this.#options.threads; thread++) releases.push(...this.#takeInflight(thread).map((job) => this.#release(job)));
      await Promise.all(releases);
    }
    clearTimeout(timer);
    clearInterval(this.#watchdog);
    await this.#piscina.destroy();
    this.#state = 'closed';
  }

  stats(): PoolStatsOf<Q> {
    let refused = 0;
    for (let thread = 0; thread < this.#options.threads; thread++) refused += Atomics.load(this.#words, threadWord(thread, REFUSED));
    const pool = { threads: this.#liveThreads(), restarts: this.#restarts, refused };
    const queue = this.#queue.stats();
    return (queue instanceof Promise ? queue.then((counts) => ({ ...counts, ...pool })) : { ...queue, ...pool }) as PoolStatsOf<Q>;
  }

  #stopListening(): void {
    for (const signal of this.#options.shutdownOn) process.off(signal, this.#onSignal);
  }

  #launch(thread: number, idleDeaths = 0): void {
    const o = this.#options;
    const controller = new AbortController();
    const { port1: events, port2: threadEnd } = new MessageChannel();
    const receive = this.#events.receiver();
    events.on('message', (batch: EventBatch | null) => {
      if (batch === null) {
        events.close();
        // A recycling thread waits for this before it exits: every batch it posted was received. Pairs with exitForRecycling.
        const recycle = threadWord(thread, RECYCLE);
        if (Atomics.compareExchange(this.#words, recycle, RECYCLING, RECYCLE_HEARD) === RECYCLING) Atomics.notify(this.#words, recycle);
        return;
      }
      receive(batch);
      this.#received[thread]! += batch.count;
      if (batch.logs.length > 0) this.#writeLogs(batch.logs);
    });
    events.unref();
    const task: ThreadTask = {
      kind: 'loop',
      handlers: o.handlers,
      queue: this.#queue.share(),
      control: this.#control,
      events: threadEnd,
      thread,
      workerId: `${o.workerId}-${thread}`,
      leaseMillis: o.leaseMillis,
      concurrency: o.concurrency,
      tickMillis: TICK_MILLIS,
      timeouts: o.timeouts,
      timeoutGraceMillis: o.timeoutGraceMillis,
      unknownTypes: o.unknownTypes,
      maxJobsPerThread: o.maxJobsPerThread,
      maxHeapBytes: o.maxHeapBytes,
    };
    Atomics.store(this.#words, threadWord(thread, RECYCLE), WORKING);
    Atomics.store(this.#words, threadWord(thread, RETIRE), 0);
    const tick = Atomics.load(this.#words, threadWord(thread, TICK));
    const done = this.#piscina!.run(task, { signal: controller.signal, transferList: [threadEnd] }).then(
      // A loop ends of itself when the pool closes, or when it was retired: its place is free for a later launch.
      () => {
        if (this.#loops[thread]?.retired === true) this.#loops[thread] = undefined;
      },
      (error: unknown) => {
        events.close();
        return this.#replace(thread, error);
      },
    );
    const now = performance.now();
    const started = Atomics.load(this.#words, threadWord(thread, STARTED));
    this.#loops[thread] = {
      controller, lastTick: tick, launchTick: tick, lastChange: now, launchedAt: now, idleDeaths, done, lastStarted: started, lastBusy: now, retired: false,
    };
  }

  /** The threads working now (launched and not retired); before the pool starts, the minThreads it will start. */
  #liveThreads(): number {
    if (this.#state === 'new' || this.#state === 'starting') return this.#options.minThreads;
    return this.#loops.filter((loop) => loop !== undefined && !loop.retired).length;
  }

  /**
   * Between minThreads and maxThreads: retires a thread above minThreads that
   * has started no job for idleTimeoutMillis, and, while every live thread is
   * full (it holds `concurrency` jobs) and the queue has a job ready, launches
   * one more (one per look, so a burst adds threads one tick apart).
   */
  #scale(now: number): void {
    const { threads, minThreads, idleTimeoutMillis, concurrency } = this.#options;
    if (minThreads === threads || this.#state !== 'running') return;
    let live = 0;
    let full = 0;
    for (let thread = 0; thread < threads; thread++) {
      const loop = this.#loops[thread];
      if (loop === undefined || loop.retired) continue;
      live++;
      let held = 0;
      for (let place = 0; place < concurrency; place++) if (this.#inflight[inflightAt(thread, concurrency, place) + INFLIGHT_JOB_NUM] !== 0) held++;
      if (held === concurrency) full++;
      const started = Atomics.load(this.#words, threadWord(thread, STARTED));
      if (held > 0 || started !== loop.lastStarted) {
        loop.lastStarted = started;
        loop.lastBusy = now;
      } else if (live > minThreads && now - loop.lastBusy > idleTimeoutMillis) {
        // It leases no more and its loop ends (Pairs with WorkerLoop#leaving); piscina ends the idle thread later.
        loop.retired = true;
        Atomics.store(this.#words, threadWord(thread, RETIRE), 1);
        live--;
      }
    }
    if (live < threads && full === live && !this.#askingForWork) void this.#growIfReady();
  }

  #askingForWork = false;

  /** Launches one more thread if the queue has a job ready now. */
  async #growIfReady(): Promise<void> {
    this.#askingForWork = true;
    try {
      const { ready } = await this.#queue.stats();
      const free = this.#loops.findIndex((loop) => loop === undefined);
      if (ready > 0 && free !== -1 && this.#state === 'running') this.#launch(free);
    } catch {
      // The queue could not answer (Redis down): the threads there are carry on; a later look tries again.
    } finally {
      this.#askingForWork = false;
    }
  }

  /** Once the pool thread `threadId` has exited, frees the queue rows it held (see JobQueue#threadExited). */
  #onExit(piscina: Piscina, threadId: number): void {
    const queue = this.#queue;
    if (queue.threadExited === undefined) return;
    piscina.threads.find((worker) => worker.threadId === threadId)?.once('exit', () => {
      try {
        queue.threadExited!(threadId);
      } catch (error) {
        // The queue was closed under the pool: this instance can free nothing.
        if (!(error instanceof IllegalStateError)) throw error;
      }
    });
  }

  /** A loop ended by a crash (or our abort of a hung thread): hand its jobs back and start a new one. */
  async #replace(thread: number, error: unknown): Promise<void> {
    const loop = this.#loops[thread]!;
    if (Atomics.load(this.#words, threadWord(thread, RECYCLE)) === RECYCLE_HEARD && loop.lastChange !== Infinity) {
      // Recycled (maxJobsPerThread, maxHeapBytes): it settled its jobs and its events came; a successor starts at once
      // (none for a thread that was also retired: its place is free).
      if (loop.retired) this.#loops[thread] = undefined;
      else if (this.#state === 'running') this.#launch(thread);
      return;
    }
    const held = this.#takeInflight(thread);
    // The records the thread had not posted died with it: drain() waits for them no more.
    this.#received[thread] = Atomics.load(this.#words, threadWord(thread, RECORDED));
    const outOfMemory = (error as { code?: unknown } | null)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
    const reason = outOfMemory ? OUT_OF_MEMORY : held.length > 0 ? THREAD_DIED : THREAD_DIED_IDLE;
    const replaced = this.#state === 'running';
    // lastChange is Infinity once the watchdog terminated the thread: then the abort's own message says nothing.
    const why = loop.lastChange === Infinity ? HUNG : `${reason}: ${thrownText(error)}`;
    this.#events.threadLost({ thread, error: why }, replaced);
    await this.#handBack(held, reason);
    if (loop.retired) {
      // It was leaving anyway: its place is free, no successor.
      this.#loops[thread] = undefined;
      return;
    }
    if (this.#state !== 'running') return;
    this.#restarts++;
    // A job that kills its thread is the job's failure: the next thread starts at once. A thread that died holding
    // no job died in its own loop: it could not start, or its queue refuses every call (a full disk, Redis down).
    // Relaunching it at once would start hundreds of threads a second, each failing as fast: pause instead,
    // longer with each such death in a row, until a thread gets through.
    const idleDeaths = held.length > 0 ? 0 : (performance.now() - loop.launchedAt > LIVED_MILLIS ? 0 : loop.idleDeaths) + 1;
    if (idleDeaths > 0) {
      await new Promise((r) => setTimeout(r, Math.min(RELAUNCH_PAUSE_MILLIS * 2 ** (idleDeaths - 1), MAX_RELAUNCH_PAUSE_MILLIS)));
      if (this.#state !== 'running') return;
    }
    this.#launch(thread, idleDeaths);
  }

  /**
   * Fails the jobs a dead or hung thread held (`held`, taken by #takeInflight), so they retry now rather than
   * when their leases expire (a job past its timeout fails as timed out), and
   * tells the listeners what became of each.
   */
  async #handBack(held: readonly InflightJob[], reason: string): Promise<void> {
    await Promise.all(held.map(async (job) => {
      const error = job.overdue ? `timed out after ${job.timeout} ms` : reason;
      try {
        await this.#queue.fail(job.jobId, job.token, error);
      } catch {
        // A refusal means the lease had already ended (expired, or the thread settled it): nothing to hand back.
        return;
      }
      const event = { jobId: job.jobId, attempt: job.attempt, waitMillis: job.waitMillis, durationMs: Date.now() - job.startedAt, error };
      try {
        const { type, status } = await this.#queue.view(job.jobId);
        if (!job.overdue) this.#events.job(EventKind.Stalled, { ...event, type });
        this.#events.job(status === JobStatus.DEAD ? EventKind.Dead : EventKind.Retrying, { ...event, type });
      } catch {
        // Evicted or unreachable meanwhile: the fail stood; there is nothing more to tell.
      }
    }));
  }

  /** Hands a job back unfinished: a closing pool could not wait for it. */
  async #release(job: InflightJob): Promise<void> {
    try {
      await this.#queue.release(job.jobId, job.token);
    } catch {
      // Refused: the thread settled it meanwhile, or the lease had already expired.
    }
  }

  /** The jobs a thread holds now, taken from the control block so that no one hands them back twice. */
  #takeInflight(thread: number): InflightJob[] {
    const jobs: InflightJob[] = [];
    const now = Date.now();
    for (let place = 0; place < this.#options.concurrency; place++) {
      const at = inflightAt(thread, this.#options.concurrency, place);
      const inflight = this.#inflight;
      const jobNum = inflight[at + INFLIGHT_JOB_NUM]!;
      if (jobNum === 0) continue;
      inflight[at + INFLIGHT_JOB_NUM] = 0;
      const deadline = inflight[at + INFLIGHT_DEADLINE]!;
      jobs.push({
        jobId: jobIdOf(jobNum),
        token: inflight[at + INFLIGHT_TOKEN]!,
        attempt: inflight[at + INFLIGHT_ATTEMPT]!,
        waitMillis: inflight[at + INFLIGHT_WAIT]!,
        startedAt: inflight[at + INFLIGHT_STARTED_AT]!,
        timeout: inflight[at + INFLIGHT_TIMEOUT]!,
        overdue: deadline !== 0 && now > deadline,
      });
    }
    return jobs;
  }

  /**
   * Extends the leases of jobs that report progress (ProgressWatch), and
   * terminates threads whose event loop has not turned for HANG_LEASES leases
   * (nor any of their jobs reported progress),
   * or for a few ticks while one of their jobs is past its timeout and grace.
   */
  #watch(): void {
    const now = performance.now();
    this.#scale(now);
    const silence = Math.max(HANG_LEASES * this.#options.leaseMillis, 10 * TICK_MILLIS);
    const heard = this.#events.progressHeard ? this.#onProgress : undefined;
    for (let thread = 0; thread < this.#options.threads; thread++) {
      const loop = this.#loops[thread];
      if (loop === undefined || loop.lastChange === Infinity) continue;
      // A job that reports progress keeps its lease (extended here) and its thread: it is busy, not hung.
      const reported = this.#progress.sample(thread, now, heard);
      const tick = Atomics.load(this.#words, threadWord(thread, TICK));
      if (tick !== loop.lastTick || reported) {
        loop.lastTick = tick;
        loop.lastChange = now;
        continue;
      }
      // (A thread that has not ticked yet is still starting: importing modules is not hanging.)
      if (tick === loop.launchTick) continue;
      const silent = now - loop.lastChange;
      if (silent > silence || (silent > TIMEOUT_SILENT_TICKS * TICK_MILLIS && this.#overdue(thread))) {
        loop.lastChange = Infinity; // abort once; the replacement comes through #replace
        loop.controller.abort();
      }
    }
  }

  readonly #onProgress = (report: ProgressReport): void => this.#events.progress(report);

  /**
   * Writes the log lines a thread sent (pairs: job id, line) through the queue, in order (one connection keeps
   * a Redis queue's in order). A line the queue refuses (its job is gone: evicted or removed) is dropped.
   */
  #writeLogs(logs: readonly string[]): void {
    for (let i = 0; i < logs.length; i += 2) {
      try {
        const written = this.#queue.log(logs[i]!, logs[i + 1]!);
        if (written instanceof Promise) written.catch(() => undefined);
      } catch {
        // The job is gone: nothing to keep its line for.
      }
    }
  }

  /** Whether a job of `thread` is past its timeout and grace. */
  #overdue(thread: number): boolean {
    const now = Date.now();
    for (let place = 0; place < this.#options.concurrency; place++) {
      const at = inflightAt(thread, this.#options.concurrency, place);
      const deadline = this.#inflight[at + INFLIGHT_DEADLINE]!;
      if (this.#inflight[at + INFLIGHT_JOB_NUM] !== 0 && deadline !== 0 && now > deadline) return true;
    }
    return false;
  }
}

/** A job a thread held, as the control block says. */
interface InflightJob {
  jobId: string;
  token: number;
  attempt: number;
  /** The lease's waitMillis. */
  waitMillis: number;
  startedAt: number;
  timeout: number;
  /** Past its timeout and grace: it fails as timed out. */
  overdue: boolean;
}
