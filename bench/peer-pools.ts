/**
 * The thread pools the drains are compared with: piscina and tinypool, each
 * with a fixed number of threads running noop-task.mjs. The main thread hands
 * out every task (`pool.run`), as these pools are used.
 */
import { performance } from 'node:perf_hooks';
import { Piscina } from 'piscina';
import { Tinypool } from 'tinypool';

const TASK = new URL('./noop-task.mjs', import.meta.url).href;
/** Tasks in flight at once: enough to keep every thread busy, few enough not to measure a million pending promises. */
const BATCH = 10_000;
const IDLE_MILLIS = 60_000;

export interface PeerPool {
  readonly name: string;
  readonly threads: number;
  run(): Promise<unknown>;
  destroy(): Promise<void>;
}

export function piscinaPool(threads: number): PeerPool {
  const pool = new Piscina({ filename: TASK, minThreads: threads, maxThreads: threads, idleTimeout: IDLE_MILLIS });
  return { name: 'piscina', threads, run: () => pool.run(null), destroy: () => pool.destroy() };
}

export function tinypoolPool(threads: number): PeerPool {
  const pool = new Tinypool({ filename: TASK, minThreads: threads, maxThreads: threads, idleTimeout: IDLE_MILLIS });
  return { name: 'tinypool', threads, run: () => pool.run(null), destroy: () => pool.destroy() };
}

export const PEER_SETTINGS = `minThreads = maxThreads = threads, Promise.all over pool.run(null) in batches of ${BATCH.toLocaleString('en-US')}`;

/** Milliseconds for `pool` to run `tasks` no-op tasks. */
export async function drainPeer(pool: PeerPool, tasks: number): Promise<number> {
  const start = performance.now();
  for (let sent = 0; sent < tasks; sent += BATCH) {
    const batch = Math.min(BATCH, tasks - sent);
    await Promise.all(Array.from({ length: batch }, () => pool.run()));
  }
  return performance.now() - start;
}
