import { IllegalStateError, JobNotFoundError } from '../errors.js';
import type { Lease } from '../types.js';
import { openWorkerQueue, type QueueHandle, type WorkerQueue } from './backend.js';
import { loadHandlers, type Handler, type HandlerContext } from './handlers.js';
import {
  INFLIGHT_JOB_NUM, INFLIGHT_TOKEN, MAX_TIMER_MILLIS, REFUSED, STOP, TICK, inflightAt, threadWord, type PoolControlBuffers,
} from './layout.js';

/** What the main thread sends a pool thread: check the handler module, or run the worker loop. */
export type ThreadTask =
  | { kind: 'probe'; handlers: string }
  | {
      kind: 'loop';
      handlers: string;
      queue: QueueHandle;
      control: PoolControlBuffers;
      thread: number;
      workerId: string;
      leaseMillis: number;
      concurrency: number;
      tickMillis: number;
    };

/** The piscina task: one per pool thread, which then polls the queue itself until the pool stops. */
export default async function run(task: ThreadTask): Promise<string[]> {
  const handlers = await loadHandlers(task.handlers);
  if (task.kind === 'probe') return [...handlers.keys()];
  await new WorkerLoop(task, handlers, await openWorkerQueue(task.queue)).run();
  return [];
}

/** Longest idle sleep: jobs that become ready by the clock alone (a backoff, a runAt) wake no one. */
const IDLE_MILLIS = 50;

class WorkerLoop {
  readonly #task: Extract<ThreadTask, { kind: 'loop' }>;
  readonly #handlers: Map<string, Handler>;
  readonly #queue: WorkerQueue;
  readonly #words: Int32Array;
  readonly #inflight: Float64Array;
  readonly #running = new Map<Promise<unknown>, AbortController>();
  readonly #places: number[];
  #sleep: Promise<unknown> | undefined;

  constructor(task: Extract<ThreadTask, { kind: 'loop' }>, handlers: Map<string, Handler>, queue: WorkerQueue) {
    this.#task = task;
    this.#handlers = handlers;
    this.#queue = queue;
    this.#words = new Int32Array(task.control.words);
    this.#inflight = new Float64Array(task.control.inflight);
    this.#places = Array.from({ length: task.concurrency }, (_, i) => i);
  }

  async run(): Promise<void> {
    const words = this.#words;
    const tick = threadWord(this.#task.thread, TICK);
    // The tick shows the main thread that this event loop turns; a handler that never yields stops it.
    // The first, now, says the thread has started: from here on, silence means a hang.
    Atomics.add(words, tick, 1);
    const ticker = setInterval(() => {
      Atomics.add(words, tick, 1);
      if (this.#stopping()) for (const controller of this.#running.values()) controller.abort(new Error('the pool is closing'));
    }, this.#task.tickMillis);
    try {
      let yielded = performance.now();
      while (!this.#stopping()) {
        // Back-to-back jobs chain through microtasks, which starve timers (ticks, heartbeats):
        // give the event loop a full turn now and then.
        if (performance.now() - yielded > this.#task.tickMillis) {
          await new Promise((resolve) => setImmediate(resolve));
          yielded = performance.now();
        }
        while (this.#running.size < this.#task.concurrency && !this.#stopping()) {
          const lease = await this.#queue.poll(this.#task.workerId, this.#task.leaseMillis);
          if (lease === undefined) break;
          this.#start(lease);
        }
        if (this.#stopping()) break;
        const running: Promise<unknown>[] = [...this.#running.keys()];
        if (running.length < this.#task.concurrency) running.push(this.#idle());
        await Promise.race(running);
      }
      // A job that finishes now may have leased its successor (completeAndPoll raced the stop): wait for that one too.
      while (this.#running.size > 0) await Promise.allSettled([...this.#running.keys()]);
    } finally {
      clearInterval(ticker);
      await this.#queue.close();
    }
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

  #start(lease: Lease): void {
    const controller = new AbortController();
    const place = this.#places.pop()!;
    const at = inflightAt(this.#task.thread, this.#task.concurrency, place);
    this.#inflight[at + INFLIGHT_TOKEN] = lease.token;
    this.#inflight[at + INFLIGHT_JOB_NUM] = Number(lease.jobId.slice(1));
    const done = this.#runJob(lease, controller).finally(() => {
      this.#inflight[at + INFLIGHT_JOB_NUM] = 0;
      this.#places.push(place);
      this.#running.delete(done);
    });
    this.#running.set(done, controller);
    // The job's complete may have leased the next one: run it at once, before the loop polls again.
    done.then((next) => next !== undefined && this.#start(next), () => undefined);
  }

  /** Runs the job's handler and settles its lease; resolves to the next job's lease if the complete took one. */
  async #runJob(lease: Lease, controller: AbortController): Promise<Lease | undefined> {
    const queue = this.#queue;
    const { jobId, token } = lease;
    const lost = (error: unknown): void => {
      clearInterval(beats);
      controller.abort(new Error(`the lease of ${jobId} was lost: ${(error as Error).message}`));
    };
    // A backend that answers at once (shared memory) reports a lost lease to the caller too; a remote one aborts the signal later.
    const heartbeat = (): void => {
      try {
        const extended = queue.extend(jobId, token, this.#task.leaseMillis);
        if (extended instanceof Promise) extended.catch(lost);
      } catch (error) {
        lost(error);
        throw error;
      }
    };
    // Heartbeats keep the lease while this thread's event loop turns; a hung handler stops them.
    const beats = setInterval(() => {
      try {
        heartbeat();
      } catch {
        // The signal is aborted; the handler hears of it there.
      }
    }, Math.min(MAX_TIMER_MILLIS, Math.max(1, this.#task.leaseMillis / 3)));
    const ctx: HandlerContext = { jobId, type: lease.type, attempt: lease.attempt, signal: controller.signal, heartbeat };
    try {
      const handler = this.#handlers.get(lease.type);
      if (handler === undefined) {
        throw new Error(`No handler for job type "${lease.type}" in ${this.#task.handlers}`);
      }
      await handler(lease.payload, ctx);
      clearInterval(beats);
      const { workerId, leaseMillis } = this.#task;
      if (this.#stopping()) {
        await this.#settle(() => queue.complete(jobId, token));
        return undefined;
      }
      return await this.#settle(() => queue.completeAndPoll(jobId, token, workerId, leaseMillis));
    } catch (error) {
      clearInterval(beats);
      const permanent = error instanceof Error && error.name === 'PermanentError';
      const message = error instanceof Error ? error.message : String(error);
      await this.#settle(() => queue.fail(jobId, token, message, { permanent }));
      return undefined;
    }
  }

  /** Runs a complete / fail; a refusal means this thread lost the lease (a zombie): count it, move on. */
  async #settle<T>(call: () => T | Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof IllegalStateError || error instanceof JobNotFoundError)) throw error;
      Atomics.add(this.#words, threadWord(this.#task.thread, REFUSED), 1);
      return undefined;
    }
  }
}
