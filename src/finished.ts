/**
 * `finished(jobId)` for every backend: look at the job; if it has not
 * finished, sleep on the backend's watch until some job may have, and look
 * again. The watch is armed before each look, so a finish between the look
 * and the sleep ends the sleep at once: none is missed, and nothing polls.
 */
import { AbortedError, JobFailedError, TimeoutError } from './errors.js';
import { JobStatus, type JobView } from './types.js';
import { checkFinishedOptions } from './validate.js';

type Awaitable<T> = T | Promise<T>;

/** How a backend lets `finished` sleep until a job may have finished. */
export interface FinishWatch {
  /** Starts (or renews) the watch: a finish from now on ends the next `changed`. */
  arm(): Awaitable<unknown>;
  /** Resolves once a job may have finished since `arm` (perhaps another one), or once `stop` aborts. */
  changed(stop: AbortSignal): Promise<void>;
  /** Ends the watch. */
  close(): void;
}

/** The longest a timer runs: setTimeout fires at once for longer delays. */
const MAX_TIMER_MILLIS = 2 ** 31 - 1;

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
  const stop = new AbortController();
  const aborted = () => stop.abort(new AbortedError(`Stopped waiting for job ${jobId} to finish: the signal aborted`, { cause: signal?.reason }));
  signal?.addEventListener('abort', aborted, { once: true });
  const timer = timeoutMillis === Infinity ? undefined : setTimeout(
    () => stop.abort(new TimeoutError(`Job ${jobId} did not finish within ${timeoutMillis} ms`)),
    Math.min(timeoutMillis, MAX_TIMER_MILLIS),
  );
  try {
    for (;;) {
      await watch.arm();
      const view = await look();
      if (view.status === JobStatus.SUCCEEDED) return view.result;
      if (view.status === JobStatus.DEAD || view.status === JobStatus.CANCELLED) throw new JobFailedError(view.id, view.status, view.lastError);
      if (signal?.aborted === true) aborted();
      if (stop.signal.aborted) throw stop.signal.reason;
      await watch.changed(stop.signal);
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', aborted);
    watch.close();
  }
}
