/**
 * `finished(jobId)` for every backend: look at the job; if it has not
 * finished, sleep on the backend's watch until some job may have, and look
 * again. The watch is armed before each look, so a finish between the look
 * and the sleep ends the sleep at once: none is missed, and nothing polls.
 */
import { AbortedError, JobFailedError, TimeoutError } from './errors.js';
import { JobStatus, type JobView } from './types.js';
import { startTimer } from './long-timer.js';
import { checkFinishedOptions } from './validate/waits.js';

type Awaitable<T> = T | Promise<T>;

/** How a backend lets `finished` sleep until a job may have finished. */
export interface FinishWatch {
  /** Starts (or renews) the watch: a finish from now on ends the next `changed`. */
  arm(): Awaitable<unknown>;
  /** Resolves once a job may have finished since `arm` (perhaps another one), or once `stop` aborts (none: nothing stops the wait). */
  changed(stop: AbortSignal | undefined): Promise<void>;
  /** Ends the watch. */
  close(): void;
}

/**
 * Settles when job `jobId` finishes: resolves with its result (undefined
 * for none) once SUCCEEDED, rejects JobFailedError once DEAD or CANCELLED,
 * JobNotFoundError if `look` does (an unknown id, or a job evicted before it
 * was seen finished), TimeoutError after `timeoutMillis`, AbortedError when
 * `signal` aborts. A job seen finished at the first look settles at once.
 * Only a timeout's timer keeps the event loop alive.
 */
export async function untilFinished(jobId: string, options: unknown, look: () => Awaitable<JobView>, watch: FinishWatch): Promise<unknown> {
  const { timeoutMillis, signal } = checkFinishedOptions(options);
  // Only a wait that something can stop (a signal, a timeout) makes an AbortController and listens to it. That
  // work runs on the submitting thread as a pool thread wakes for the job (pool.run), and takes a core from it.
  const stop = signal === undefined && timeoutMillis === Infinity ? undefined : new AbortController();
  const aborted = () => stop!.abort(new AbortedError(`Stopped waiting for job ${jobId} to finish: the signal aborted`, { cause: signal?.reason }));
  signal?.addEventListener('abort', aborted, { once: true });
  const timer = timeoutMillis === Infinity
    ? undefined
    : startTimer(() => stop!.abort(new TimeoutError(`Job ${jobId} did not finish within ${timeoutMillis} ms`)), timeoutMillis);
  try {
    for (;;) {
      await watch.arm();
      const view = await look();
      if (view.status === JobStatus.SUCCEEDED) return view.result;
      if (view.status === JobStatus.DEAD || view.status === JobStatus.CANCELLED) throw new JobFailedError(view.id, view.status, view.lastError);
      if (signal?.aborted === true) aborted();
      if (stop?.signal.aborted === true) throw stop.signal.reason;
      await watch.changed(stop?.signal);
    }
  } finally {
    timer?.clear();
    signal?.removeEventListener('abort', aborted);
    watch.close();
  }
}

/**
 * One client's `finished` waits, by job: what its backend's notices of
 * finishes wake. A watch registers its wake before the wait's look, then runs
 * `arm`, the backend's part (subscribe; start sleeping on the shared word):
 * so a notice from then on is heard, and a finish before it is seen by the look.
 */
export class FinishWaits {
  /** Per job, the wakes of the waits for it. */
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #arm: () => Awaitable<unknown>;

  constructor(arm: () => Awaitable<unknown>) {
    this.#arm = arm;
  }

  /** A watch over job `job` (an id, or whatever names a job in the backend's notices) for untilFinished. */
  watch(job: string): FinishWatch {
    let heard = false;
    let wake: (() => void) | undefined;
    const notice = () => {
      heard = true;
      wake?.();
    };
    return {
      arm: () => {
        heard = false;
        this.#add(job, notice);
        return this.#arm();
      },
      changed: (stop) => new Promise<void>((resolve) => {
        if (heard || stop?.aborted === true) return resolve();
        const done = () => {
          wake = undefined;
          stop?.removeEventListener('abort', done);
          resolve();
        };
        wake = done;
        stop?.addEventListener('abort', done, { once: true });
      }),
      close: () => this.#remove(job, notice),
    };
  }

  /** The jobs waited for. */
  jobs(): IterableIterator<string> {
    return this.#waiters.keys();
  }

  get size(): number {
    return this.#waiters.size;
  }

  /** Wakes the waits for `job`: each looks at it again. */
  wake(job: string): void {
    for (const wake of this.#waiters.get(job) ?? []) wake();
  }

  /** Wakes every wait (a notice may have been lost, or the queue closed): each looks again. */
  wakeAll(): void {
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
  }

  #add(job: string, wake: () => void): void {
    let waiters = this.#waiters.get(job);
    if (waiters === undefined) this.#waiters.set(job, (waiters = new Set()));
    waiters.add(wake);
  }

  #remove(job: string, wake: () => void): void {
    const waiters = this.#waiters.get(job);
    waiters?.delete(wake);
    if (waiters?.size === 0) this.#waiters.delete(job);
  }
}
