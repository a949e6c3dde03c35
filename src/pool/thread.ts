import type { MessagePort } from 'node:worker_threads';
import { IllegalStateError, InvalidArgumentError, JobCancelledError, JobNotFoundError, UnsupportedOperationError, thrownText } from '../errors.js';
import type { Lease } from '../types.js';
import { parseJobId } from '../validate/job-id.js';
import { MAX_BATCH } from '../validate/lease.js';
import { errorType } from '../tracing/conventions.js';
import { ProcessSpan } from '../tracing/consumer.js';
import { openWorkerQueue, tracedName, type QueueHandle, type WorkerQueue } from './backend.js';
import { BatchedCompletions } from './completions.js';
import { EventKind, EventRecorder } from './events.js';
import { loadHandlers, type Handler } from './handlers.js';
import { Heartbeats } from './heartbeats.js';
import { snoozeDelayOf } from './snooze.js';
import { JobContext, LazyAbort, ProgressPlace } from './job-context.js';
import {
  EVENTS, INFLIGHT_ATTEMPT, INFLIGHT_DEADLINE, INFLIGHT_JOB_NUM, INFLIGHT_STARTED_AT, INFLIGHT_TIMEOUT, INFLIGHT_TOKEN, INFLIGHT_WAIT,
  RECORDED, RECYCLE, RECYCLE_HEARD, RECYCLING, REFUSED, RETIRE, STARTED, STOP, TICK, inflightAt, progressAt, threadWord, type PoolControlBuffers,
} from './layout.js';
import { getHeapStatistics } from 'node:v8';
import { MAX_TIMER_MILLIS, startTimer, type LongTimer } from '../long-timer.js';
import { NO_TIMEOUT, type FilledPoolOptions } from './options.js';

/** What the main thread sends a pool thread: check the handler module, or run the worker loop. */
export type ThreadTask =
  | { kind: 'probe'; handlers: string }
  | {
      kind: 'loop';
      handlers: string;
      queue: QueueHandle;
      control: PoolControlBuffers;
      /** Where this thread posts its event batches (see events.ts). */
      events: MessagePort;
      thread: number;
      workerId: string;
      leaseMillis: number;
      concurrency: number;
      tickMillis: number;
      timeouts: FilledPoolOptions['timeouts'];
      timeoutGraceMillis: number;
      unknownTypes: FilledPoolOptions['unknownTypes'];
      maxJobsPerThread: number;
      maxHeapBytes: number;
    };
type LoopTask = Extract<ThreadTask, { kind: 'loop' }>;

/**
 * The piscina task: one per pool thread, which then polls the queue itself
 * until the pool stops. What it throws leaves as an Error: piscina settles a
 * task that rejects with a falsy value (a module that throws null) as done,
 * so that the pool would take a module that did not load for one that did,
 * and a thread that died for one that stopped.
 */
export default async function run(task: ThreadTask): Promise<string[]> {
  try {
    const handlers = await loadHandlers(task.handlers);
    if (task.kind === 'probe') return [...handlers.keys()];
    const loop = new WorkerLoop(task, handlers, await openWorkerQueue(task.queue));
    await loop.run();
    if (loop.recycling) await exitForRecycling(task);
    return [];
  } catch (error) {
    throw error instanceof Error ? error : new Error(thrownText(error));
  }
}

/**
 * Ends this thread (not just its task) so that its successor gets a new heap:
 * once the main thread has received its last events (RECYCLE_HEARD; the loop
 * stored RECYCLING, then posted them, before it returned), it exits. piscina then settles the task as
 * failed by the exit, and the main thread, seeing RECYCLING, launches a
 * successor rather than counting a crash.
 */
async function exitForRecycling(task: LoopTask): Promise<never> {
  const words = new Int32Array(task.control.words);
  const word = threadWord(task.thread, RECYCLE);
  // RECYCLING was stored before the loop posted its last batch. Pairs with the main thread's store of RECYCLE_HEARD and notify, on the end of this thread's batches.
  while (Atomics.load(words, word) !== RECYCLE_HEARD) await Atomics.waitAsync(words, word, RECYCLING).value;
  process.exit(0);
}

/** Cancels heard for jobs not (yet) running on this thread, kept at most. */
const MAX_CANCELLED_EARLY = 256;

/** Longest idle sleep: jobs that become ready by the clock alone (a backoff, a runAt) wake no one. */
const IDLE_MILLIS = 50;

/** The abort reason of a close: a job that stops on it is handed back, not failed. */
const CLOSING = new Error('the pool is closing');

/** How the lastError of an attempt whose handler returned a result the queue refused (not JSON-serializable, too large) starts. */
const RESULT_REFUSED = "the handler's return value was refused as the job's result";

/** Why a job did not complete: the text for its lastError, whether to dead-letter it at once, and its `error.type` for a trace. */
interface Failure {
  message: string;
  permanent: boolean;
  type: string;
}

class WorkerLoop {
  readonly #task: LoopTask;
  readonly #handlers: Map<string, Handler>;
  readonly #queue: WorkerQueue;
  readonly #words: Int32Array;
  readonly #inflight: Float64Array;
  readonly #events: EventRecorder;
  readonly #running = new Map<Promise<unknown>, LazyAbort>();
  /** The running jobs' signals by job id, for the cancels this loop hears (see `#heardCancel`). */
  readonly #byJob = new Map<string, LazyAbort>();
  /** Jobs heard cancelled before their lease reached this loop (a Redis message can overtake a poll's reply), newest last. */
  readonly #cancelledEarly = new Set<string>();
  /** The running jobs' heartbeats, on one timer. */
  readonly #heartbeats = new Heartbeats();
  /** The free places of the inflight block. */
  readonly #places: number[];
  /** Each place's progress words (see layout.ts). */
  readonly #progress: ProgressPlace[];
  /** Leases taken before a place was free for them (a batch's, while its own jobs finish): each starts in the next place freed. */
  readonly #waitingForPlace: Lease[] = [];
  /** Places held for leases on their way (a pollMany or a batch in flight). */
  #reserved = 0;
  /** Jobs this thread has started, for `maxJobsPerThread`. */
  #started = 0;
  /** Set once this thread reached `maxJobsPerThread` or `maxHeapBytes`: it leases no more, and exits once its jobs are settled. */
  recycling = false;
  /** Where this thread's completes go when its queue batches them (Redis, concurrency > 1). */
  readonly #batches: BatchedCompletions | undefined;
  #sleep: Promise<unknown> | undefined;
  /** Set when a job's completeAndPoll was accepted and leased nothing: the loop need not poll again before it blocks. */
  #completeFoundNothing = false;
  /** The queue's name in each attempt's process span, or null when the queue is not traced. */
  readonly #tracing: string | null;

  constructor(task: LoopTask, handlers: Map<string, Handler>, queue: WorkerQueue) {
    this.#task = task;
    this.#tracing = tracedName(task.queue);
    this.#handlers = handlers;
    this.#queue = queue;
    this.#words = new Int32Array(task.control.words);
    this.#inflight = new Float64Array(task.control.inflight);
    // Read on every event: listeners come and go on the main thread.
    // Counted as recorded, before the job leaves the inflight block: drain() waits for the main thread to have them all.
    const recorded = threadWord(task.thread, RECORDED);
    this.#events = new EventRecorder(task.events, () => Atomics.load(this.#words, EVENTS) !== 0, () => Atomics.add(this.#words, recorded, 1));
    this.#places = Array.from({ length: task.concurrency }, (_, i) => i);
    const progressWords = new Int32Array(task.control.progress);
    this.#progress = this.#places.map((place) => new ProgressPlace(progressWords, progressAt(task.thread, task.concurrency, place)));
    const { completeManyAndPoll } = queue;
    this.#batches = task.concurrency > 1 && completeManyAndPoll !== undefined && queue.pollMany !== undefined
      ? new BatchedCompletions({ completeManyAndPoll: completeManyAndPoll.bind(queue) }, {
          workerId: task.workerId,
          leaseMillis: task.leaseMillis,
          free: () => this.#free(),
          stopping: () => this.#stopping() || this.#leaving(),
          reserve: (count) => (this.#reserved += count),
          start: (lease) => this.#start(lease),
        })
      : undefined;
  }

  /** Whether this thread leases no more: it is recycling, or the main thread retired it (RETIRE). Its jobs still settle. */
  #leaving(): boolean {
    return this.recycling || Atomics.load(this.#words, threadWord(this.#task.thread, RETIRE)) !== 0;
  }

  /** How many more jobs this thread may lease now (none once it is leaving). */
  #free(): number {
    if (this.#leaving()) return 0;
    return Math.min(this.#places.length - this.#waitingForPlace.length - this.#reserved, this.#task.maxJobsPerThread - this.#started);
  }

  async run(): Promise<void> {
    const words = this.#words;
    // Watching before the first poll: a cancel of any job this loop leases is heard.
    const stopWatching = await this.#watchCancels();
    const tick = threadWord(this.#task.thread, TICK);
    // The tick shows the main thread that this event loop turns; a handler that never yields stops it.
    // The first, now, says the thread has started: from here on, silence means a hang.
    Atomics.add(words, tick, 1);
    const ticker = setInterval(() => {
      Atomics.add(words, tick, 1);
      this.#events.flush();
      if (this.#stopping()) for (const aborter of this.#running.values()) aborter.abort(CLOSING);
    }, this.#task.tickMillis);
    try {
      let yielded = performance.now();
      /** Set when a wake from blockForWork has just polled: the loop does not poll again at once. */
      let polled = false;
      while (!this.#stopping() && !this.#leaving()) {
        // Back-to-back jobs chain through microtasks, which starve timers (ticks, heartbeats):
        // give the event loop a full turn now and then.
        if (performance.now() - yielded > this.#task.tickMillis) {
          await new Promise((resolve) => setImmediate(resolve));
          yielded = performance.now();
        }
        // A job's completeAndPoll that found nothing was this thread's last poll: idle now, it blocks at once. The
        // work signal as that poll began wakes it for any job since, as it would after a poll of its own.
        if (!polled && this.#free() > 0 && !(this.#completeFoundNothing && this.#idleHere())) await this.#pollBatch();
        polled = false;
        this.#completeFoundNothing = false;
        if (this.#stopping() || this.#leaving()) break;
        if (this.#idleHere()) {
          const woken = await this.#blockForWork(yielded);
          yielded = woken.yielded;
          polled = woken.polled;
          continue;
        }
        const running: Promise<unknown>[] = [...this.#running.keys()];
        if (this.#free() > 0) running.push(this.#idle());
        await Promise.race(running);
      }
      // A job that finishes now may have leased its successor (completeAndPoll or a batch raced the stop): wait for that one too.
      while (this.#running.size > 0 || this.#batches?.settled !== undefined) {
        await Promise.allSettled([...this.#running.keys(), this.#batches?.settled]);
      }
    } finally {
      stopWatching?.();
      clearInterval(ticker);
      this.#events.flush();
      // Said before the end of the batches, which the main thread answers with RECYCLE_HEARD (see exitForRecycling).
      if (this.recycling) Atomics.store(words, threadWord(this.#task.thread, RECYCLE), RECYCLING);
      // The end of this thread's batches: the main thread closes its side.
      this.#task.events.postMessage(null);
      await this.#queue.close();
    }
  }

  /**
   * Leases jobs up to `concurrency` (in one call where the queue batches),
   * makes the leases durable (one commit for all), then starts them.
   */
  async #pollBatch(): Promise<void> {
    const { workerId, leaseMillis } = this.#task;
    const leases: Lease[] = [];
    if (this.#batches !== undefined) {
      const max = Math.min(MAX_BATCH, this.#free());
      this.#reserved += max;
      try {
        leases.push(...(await this.#queue.pollMany!(workerId, leaseMillis, max)));
      } finally {
        this.#reserved -= max;
      }
    } else {
      while (this.#free() > leases.length && !this.#stopping()) {
        const polling = this.#queue.poll(workerId, leaseMillis);
        const lease = polling instanceof Promise ? await polling : polling;
        if (lease === undefined) break;
        leases.push(lease);
      }
    }
    if (leases.length === 0) return;
    // An attempt starts only once the journal knows of it: if this process dies in it, it counts.
    this.#queue.flush?.();
    for (const lease of leases) this.#start(lease);
  }

  /**
   * Whether this thread may block for work (see WorkerQueue#blockForWork): its queue can, and it waits for
   * nothing else — no job running or waiting for a place, no batch of completes (Redis) in flight.
   */
  #idleHere(): boolean {
    return this.#queue.blockForWork !== undefined && this.#running.size === 0 && this.#waitingForPlace.length === 0 && this.#batches === undefined && this.#free() > 0;
  }

  /**
   * Blocks this idle thread until work may have come, or for IDLE_MILLIS, as the sleep of `#idle` would. Woken,
   * it polls and starts what it leased in the same synchronous run: no turn of its event loop, nor a microtask,
   * between the wake and the handler's first line (`polled`: the loop need not poll again). The block is cut into
   * slices that end when the next turn of the event loop is due (`yielded`: when the last one ended): ticks,
   * event batches and a handler module's own timers wait at most a tick.
   */
  async #blockForWork(yielded: number): Promise<{ yielded: number; polled: boolean }> {
    const polledAt = performance.now();
    for (;;) {
      const turnIn = this.#task.tickMillis - (performance.now() - yielded);
      if (this.#queue.blockForWork!(Math.max(1, turnIn))) {
        if (this.#stopping() || this.#leaving()) return { yielded, polled: false };
        // Places left free after the first job (concurrency > 1) are filled as its handler first yields.
        if (this.#startWoken() && this.#free() > 0) await this.#pollBatch();
        return { yielded, polled: true };
      }
      await new Promise((resolve) => setImmediate(resolve));
      yielded = performance.now();
      if (this.#stopping() || this.#leaving() || yielded - polledAt >= IDLE_MILLIS) return { yielded, polled: false };
    }
  }

  /**
   * The first look of a thread blockForWork woke, lock-free only (the sleepers woken with it may have taken the
   * job: see WorkerQueue#pollAfterWake), and the start of what it leased, with no step the contract does not
   * need: a thread woken after an idle spell runs cold (other threads and processes had its core and caches
   * meanwhile), so each call, array and promise between the wake and the handler costs microseconds, not
   * nanoseconds. Measured from the wake to the poll: about 10 µs through #pollBatch, 6 µs here (2 cores, loaded).
   * Whether it leased a job.
   */
  #startWoken(): boolean {
    const { workerId, leaseMillis } = this.#task;
    const lease = this.#queue.pollAfterWake!(workerId, leaseMillis);
    if (lease === undefined) return false;
    // An attempt starts only once the journal knows of it, as in #pollBatch.
    this.#queue.flush?.();
    this.#start(lease);
    return true;
  }

  /** One sleep for work at a time, however often the loop wakes for a finished job meanwhile. */
  #idle(): Promise<unknown> {
    this.#sleep ??= this.#queue.waitForWork(IDLE_MILLIS).finally(() => {
      this.#sleep = undefined;
    });
    return this.#sleep;
  }

  #stopping(): boolean {
    return Atomics.load(this.#words, STOP) !== 0;
  }

  /**
   * Starts hearing the cancels of RUNNING jobs (see WorkerQueue#watchCancels); the function that stops it, or
   * undefined where the queue cannot tell (or its watch failed): a cancel is then heard when a heartbeat is refused.
   */
  async #watchCancels(): Promise<(() => void) | undefined> {
    try {
      return await this.#queue.watchCancels?.((jobId) => this.#heardCancel(jobId));
    } catch {
      return undefined;
    }
  }

  /**
   * A RUNNING job was cancelled: `jobId`, or (none named) any of them, each looked at. Its handler's signal
   * aborts with a JobCancelledError; the handler's outcome is refused by the queue when it ends.
   */
  #heardCancel(jobId: string | undefined): void {
    if (jobId === undefined) {
      for (const [id, aborter] of this.#byJob) void this.#abortIfCancelled(id, aborter);
      return;
    }
    const aborter = this.#byJob.get(jobId);
    if (aborter !== undefined) {
      aborter.abort(new JobCancelledError(jobId));
      return;
    }
    // Not running here (yet): kept a while, for a lease whose reply is still on its way.
    this.#cancelledEarly.add(jobId);
    if (this.#cancelledEarly.size > MAX_CANCELLED_EARLY) this.#cancelledEarly.delete(this.#cancelledEarly.values().next().value!);
  }

  async #abortIfCancelled(jobId: string, aborter: LazyAbort): Promise<void> {
    if (await this.#wasCancelled(jobId)) aborter.abort(new JobCancelledError(jobId));
  }

  /** Whether `jobId`, run here, was cancelled while it ran: its signal says so, or the queue does. */
  async #wasCancelled(jobId: string): Promise<boolean> {
    if (this.#byJob.get(jobId)?.reason instanceof JobCancelledError) return true;
    if (this.#queue.view === undefined) return false;
    try {
      return (await this.#queue.view(jobId)).status === 'CANCELLED';
    } catch {
      // Evicted since, or the queue is closing: nothing to tell.
      return false;
    }
  }

  /** Runs a lease's job in a free place, or in the next place freed if none is free now. */
  #start(lease: Lease): void {
    const place = this.#places.pop();
    if (place === undefined) {
      this.#waitingForPlace.push(lease);
      return;
    }
    // The last job this thread may start: its complete leases no successor, and the loop polls no more.
    if (++this.#started >= this.#task.maxJobsPerThread) this.recycling = true;
    Atomics.add(this.#words, threadWord(this.#task.thread, STARTED), 1);
    const aborter = new LazyAbort();
    this.#byJob.set(lease.jobId, aborter);
    if (this.#cancelledEarly.size > 0 && this.#cancelledEarly.delete(lease.jobId)) aborter.abort(new JobCancelledError(lease.jobId));
    const at = inflightAt(this.#task.thread, this.#task.concurrency, place);
    // A job's own lease length (submit's timeoutMillis) is its deadline too: it wins over the pool's timeouts.
    const timeout = lease.timeoutMillis ?? this.#task.timeouts.byType[lease.type] ?? this.#task.timeouts.default;
    const startedAt = Date.now();
    const inflight = this.#inflight;
    this.#progress[place]!.begin(lease.token);
    inflight[at + INFLIGHT_TOKEN] = lease.token;
    inflight[at + INFLIGHT_ATTEMPT] = lease.attempt;
    inflight[at + INFLIGHT_WAIT] = lease.waitMillis;
    inflight[at + INFLIGHT_STARTED_AT] = startedAt;
    inflight[at + INFLIGHT_TIMEOUT] = timeout;
    inflight[at + INFLIGHT_DEADLINE] = timeout === NO_TIMEOUT ? 0 : startedAt + timeout + this.#task.timeoutGraceMillis;
    inflight[at + INFLIGHT_JOB_NUM] = parseJobId(lease.jobId);
    const done = this.#runJob(lease, aborter, timeout, this.#progress[place]!).finally(() => {
      inflight[at + INFLIGHT_JOB_NUM] = 0;
      // Unless the job was leased here again meanwhile (its lease ran out, and this thread polled it anew).
      if (this.#byJob.get(lease.jobId) === aborter) this.#byJob.delete(lease.jobId);
      this.#places.push(place);
      this.#running.delete(done);
      const waiting = this.#waitingForPlace.shift();
      if (waiting !== undefined) this.#start(waiting);
    });
    this.#running.set(done, aborter);
    // The job's complete may have leased the next one: run it at once, before the loop polls again.
    done.then((next) => next !== undefined && this.#start(next), () => undefined);
  }

  /**
   * Runs the job's handler and settles its lease (within the attempt's
   * process span when the queue is traced); resolves to the next job's lease
   * if the complete took one.
   */
  async #runJob(lease: Lease, aborter: LazyAbort, timeout: number, progress: ProgressPlace): Promise<Lease | undefined> {
    if (this.#tracing === null) return this.#attempt(lease, aborter, timeout, progress, undefined);
    const span = new ProcessSpan(lease, this.#tracing);
    try {
      return await this.#attempt(lease, aborter, timeout, progress, span);
    } finally {
      span.end();
    }
  }

  async #attempt(lease: Lease, aborter: LazyAbort, timeout: number, progress: ProgressPlace, span: ProcessSpan | undefined): Promise<Lease | undefined> {
    const queue = this.#queue;
    const { jobId, token, type, attempt } = lease;
    const started = performance.now();
    const lost = (error: unknown): void => {
      this.#heartbeats.stop(beats);
      // Cancelled: the refused heartbeat is the cancel's doing, not a stall.
      if (aborter.reason instanceof JobCancelledError) return;
      const reason = `the lease of ${jobId} was lost: ${thrownText(error)}`;
      this.#events.record(EventKind.Stalled, lease, performance.now() - started, reason);
      aborter.abort(new Error(reason));
    };
    // A backend that answers at once (shared memory) reports a lost lease to the caller too; a remote one aborts the signal later.
    // A job with a lease length of its own keeps it: each heartbeat extends by that length.
    const extendBy = lease.timeoutMillis ?? this.#task.leaseMillis;
    const heartbeat = (): void => {
      try {
        const extended = queue.extend(jobId, token, extendBy);
        if (extended instanceof Promise) extended.catch(lost);
      } catch (error) {
        lost(error);
        throw error;
      }
    };
    // Heartbeats keep the lease while this thread's event loop turns; a hung handler stops them.
    const beats = this.#heartbeats.start(Math.min(MAX_TIMER_MILLIS, Math.max(1, extendBy / 3)), () => {
      try {
        heartbeat();
      } catch {
        // The signal is aborted; the handler hears of it there.
      }
    });
    const ctx = new JobContext(jobId, type, attempt, heartbeat, aborter, progress, (line) => this.#events.log(jobId, line), queue);
    let failure: Failure | undefined;
    let result: unknown;
    const handler = this.#handlers.get(type);
    if (handler === undefined) {
      failure = this.#unknownType(type);
    } else {
      const run = () => (timeout === NO_TIMEOUT ? handler(lease.payload, ctx) : this.#withTimeout(handler(lease.payload, ctx), timeout, aborter));
      try {
        result = await (span === undefined ? run() : span.run(run));
      } catch (error) {
        // Whatever was thrown (a proxy, an object whose getters throw) is read without throwing here.
        const type = errorType(error);
        failure = { message: thrownText(error), permanent: type === 'PermanentError', type };
      }
    }
    this.#heartbeats.stop(beats);
    const durationMs = performance.now() - started;
    // Past the heap limit: this job is settled as usual (its complete leases no successor), then the thread recycles.
    if (this.#task.maxHeapBytes !== Infinity && getHeapStatistics().used_heap_size > this.#task.maxHeapBytes) this.recycling = true;
    const snoozedFor = failure === undefined ? snoozeDelayOf(result) : undefined;
    if (snoozedFor !== undefined) {
      // The handler returned snooze(ms): the lease goes back with that delay, the attempt not counted.
      await this.#settle(lease, durationMs, () => queue.release(jobId, token, { delayMillis: snoozedFor }), () => undefined);
      return undefined;
    }
    if (failure === undefined) {
      try {
        return await this.#complete(lease, durationMs, result);
      } catch (error) {
        // The queue refused the handler's return value as the job's result (changing nothing): the attempt fails.
        // Unsupported: a result a backend cannot store.
        if (!(error instanceof InvalidArgumentError || error instanceof UnsupportedOperationError)) throw error;
        failure = { message: `${RESULT_REFUSED}: ${error.message}`, permanent: false, type: errorType(error) };
      }
    }
    if (aborter.reason === CLOSING) {
      // Stopped because the pool closes: a shutdown is not a failure.
      await this.#settle(lease, durationMs, () => queue.release(jobId, token), () => undefined);
      return undefined;
    }
    const { message, permanent } = failure;
    const kind = permanent || attempt >= lease.maxAttempts ? EventKind.Dead : EventKind.Retrying;
    span?.failed(failure.type, message, kind === EventKind.Dead);
    await this.#settle(lease, durationMs, () => queue.fail(jobId, token, message, { permanent }), () => {
      this.#events.record(kind, lease, durationMs, message);
      // At once, not at the tick: the retry may run on another thread, whose events should not come first.
      if (kind === EventKind.Retrying) this.#events.flush();
    });
    return undefined;
  }

  /** Completes the lease with the handler's return value as its result (undefined: none); the next job's lease if the complete took one. */
  async #complete(lease: Lease, durationMs: number, result: unknown): Promise<Lease | undefined> {
    const queue = this.#queue;
    const { jobId, token } = lease;
    const { workerId, leaseMillis } = this.#task;
    const completed = () => this.#events.record(EventKind.Completed, lease, durationMs);
    const batches = this.#batches;
    if (batches !== undefined) {
      await this.#settle(lease, durationMs, () => batches.complete(lease, result), completed);
      return undefined;
    }
    if (!this.#stopping() && !this.#leaving()) {
      let accepted = false;
      const next = await this.#settle(lease, durationMs, () => queue.completeAndPoll(jobId, token, workerId, leaseMillis, result), () => {
        accepted = true;
        completed();
      });
      if (accepted && next === undefined) this.#completeFoundNothing = true;
      return next;
    }
    await this.#settle(lease, durationMs, () => queue.complete(jobId, token, result), completed);
    return undefined;
  }

  /** Why a job whose type no handler exports fails, and whether for good (`unknownTypes`). */
  #unknownType(type: string): Failure {
    const known = [...this.#handlers.keys()].map((name) => `"${name}"`).join(', ') || 'none';
    return {
      message: `No handler for job type "${type}" in ${this.#task.handlers} (it exports: ${known})`,
      permanent: this.#task.unknownTypes === 'dead-letter',
      type: 'UnknownJobType',
    };
  }

  /**
   * Settles as `pending` does, unless the timeout comes first: then the signal
   * aborts, and the attempt fails with "timed out" — once the handler ends, or
   * after the grace if it does not (it is left to run out, its result ignored).
   */
  #withTimeout(pending: unknown, timeout: number, aborter: LazyAbort): Promise<unknown> {
    const timedOut = () => new Error(`timed out after ${timeout} ms`);
    return new Promise((resolve, reject) => {
      let late = false;
      let grace: LongTimer | undefined;
      const deadline = startTimer(() => {
        late = true;
        aborter.abort(timedOut());
        grace = startTimer(() => reject(timedOut()), this.#task.timeoutGraceMillis);
      }, timeout);
      const settle = (error?: unknown, value?: unknown) => {
        deadline.clear();
        grace?.clear();
        if (late) reject(timedOut());
        else if (error !== undefined) reject(error);
        else resolve(value);
      };
      Promise.resolve(pending).then((value) => settle(undefined, value), (error: unknown) => settle(error ?? new Error(String(error))));
    });
  }

  /**
   * Runs a complete / fail / release and then `accepted`; a refusal means this
   * thread lost the lease (a zombie): count it, tell the listeners, move on.
   */
  async #settle<T>(lease: Lease, durationMs: number, call: () => T | Promise<T>, accepted: () => void): Promise<T | undefined> {
    let result: T;
    try {
      result = await call();
    } catch (error) {
      if (!(error instanceof IllegalStateError || error instanceof JobNotFoundError)) throw error;
      if (await this.#wasCancelled(lease.jobId)) {
        // Not a zombie: the job ended CANCELLED while it ran, and stays so.
        this.#events.record(EventKind.Cancelled, lease, durationMs, `cancelled while it ran; its outcome was refused: ${error.message}`);
        return undefined;
      }
      Atomics.add(this.#words, threadWord(this.#task.thread, REFUSED), 1);
      this.#events.record(EventKind.Refused, lease, durationMs, error.message);
      return undefined;
    }
    accepted();
    return result;
  }
}
