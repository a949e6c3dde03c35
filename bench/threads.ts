/** Worker-thread plumbing shared by the suites that time threads: one barrier-released run, guarded against crashed threads. */
import { once } from 'node:events';
import type { Worker } from 'node:worker_threads';

/** The barrier's shared words, passed to the workers with each run. */
const WORDS = { ready: 0, go: 1, done: 2, count: 3 } as const;

/** Resolves once `flags[index] >= target`, without blocking the main thread. */
async function reached(flags: Int32Array, index: number, target: number): Promise<void> {
  for (;;) {
    const seen = Atomics.load(flags, index);
    if (seen >= target) return;
    const wait = Atomics.waitAsync(flags, index, seen);
    if (wait.async) await wait.value;
  }
}

/** `work`, or the first error a worker thread dies of (a thread that never loads would hang the barrier). */
function unlessCrashed<T>(workers: readonly Worker[], work: Promise<T>): Promise<T> {
  let onError: (error: Error) => void = () => {};
  const crashed = new Promise<never>((_, reject) => {
    onError = reject;
    for (const worker of workers) worker.on('error', onError);
  });
  return Promise.race([work, crashed]).finally(() => {
    for (const worker of workers) worker.off('error', onError);
  });
}

/** Lets parked workers go at once; returns the time they were released (performance.now()). */
function release(flags: Int32Array): number {
  const start = performance.now();
  Atomics.store(flags, WORDS.go, 1);
  Atomics.notify(flags, WORDS.go);
  return start;
}

/**
 * One timed run of parked workers: posts `message` (with the barrier's words)
 * to each (or `message(i)` to the i-th), releases them together once all have checked in, and waits until
 * all have checked out. Returns the milliseconds from the release to the last
 * check-out and every worker's reply; a reply that carries an error throws.
 */
export async function runAtBarrier<R extends { error: string | null }>(
  workers: readonly Worker[],
  message: object | ((worker: number) => object),
  what: string,
): Promise<{ millis: number; replies: R[] }> {
  const flags = new Int32Array(new SharedArrayBuffer(WORDS.count * Int32Array.BYTES_PER_ELEMENT));
  const replies = workers.map((worker) => once(worker, 'message') as Promise<[R]>);
  workers.forEach((worker, i) => worker.postMessage({ ...(typeof message === 'function' ? message(i) : message), control: flags.buffer, words: WORDS }));
  await unlessCrashed(workers, reached(flags, WORDS.ready, workers.length));
  const start = release(flags);
  await unlessCrashed(workers, reached(flags, WORDS.done, workers.length));
  const millis = performance.now() - start;
  const results = (await Promise.all(replies)).map(([reply]) => reply);
  for (const { error } of results) if (error !== null) throw new Error(`${what} failed: ${error}`);
  return { millis, replies: results };
}
