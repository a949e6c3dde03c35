/** Worker-thread plumbing shared by the suites that time threads: a barrier, and a guard against crashed threads. */
import type { Worker } from 'node:worker_threads';

/** The barrier's shared words, passed to the workers with each run. */
export const WORDS = { ready: 0, go: 1, done: 2, count: 3 } as const;

/** Resolves once `flags[index] >= target`, without blocking the main thread. */
export async function reached(flags: Int32Array, index: number, target: number): Promise<void> {
  for (;;) {
    const seen = Atomics.load(flags, index);
    if (seen >= target) return;
    const wait = Atomics.waitAsync(flags, index, seen);
    if (wait.async) await wait.value;
  }
}

/** `work`, or the first error a worker thread dies of (a thread that never loads would hang the barrier). */
export function unlessCrashed<T>(workers: readonly Worker[], work: Promise<T>): Promise<T> {
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
export function release(flags: Int32Array): number {
  const start = performance.now();
  Atomics.store(flags, WORDS.go, 1);
  Atomics.notify(flags, WORDS.go);
  return start;
}
