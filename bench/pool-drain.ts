/**
 * The timed WorkerPool drain that the pool-events and metrics suites compare
 * with and without something attached to the pool: a pool of `threads`
 * threads, started idle, drains `jobs` no-op jobs; a run times from the
 * submitMany of them all to the drain that sees them all SUCCEEDED. Cases
 * alternate run by run, so a machine getting busier slows each alike; one
 * warmup run each.
 */
import { performance } from 'node:perf_hooks';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../dist/index.js';
import { MiB, QUICK } from './conditions.js';

/**
 * Timed runs per case. Nine, not five: the cases differ by a few percent at
 * most, and on this machine a five-run median of either swung by ±5% from
 * one run of the suite to the next.
 */
export const DRAIN_RUNS = QUICK ? 1 : 9;

/** The handler module, inline: one no-op job type. */
const HANDLERS = 'data:text/javascript,export function noop() {}';

/** What a case attaches to a new pool before it starts. */
export interface Attachment {
  /** After the drain and the pool's close (every event heard): a note if it saw a wrong count. */
  check(): Promise<string | undefined> | string | undefined;
  detach(): void;
}
export type Attach = (queue: JobQueue, pool: WorkerPool) => Attachment;

/** Milliseconds per timed run, by case: each case `1 + runs` times, alternating, the first run of each untimed. */
export async function alternatingDrains<K extends string>(
  cases: Readonly<Record<K, Attach | undefined>>, runs: number, jobs: number, threads: number, notes: string[],
): Promise<Record<K, number[]>> {
  const names = Object.keys(cases) as K[];
  const times = Object.fromEntries(names.map((name) => [name, []])) as unknown as Record<K, number[]>;
  for (let run = 0; run <= runs; run++) {
    for (const name of names) {
      const millis = await drainOnce(name, cases[name], jobs, threads, notes);
      if (run > 0) times[name].push(millis);
    }
  }
  return times;
}

async function drainOnce(name: string, attach: Attach | undefined, jobs: number, threads: number, notes: string[]): Promise<number> {
  const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { capacity: jobs, arenaBytes: 32 * MiB });
  const pool = new WorkerPool(queue, { handlers: HANDLERS, threads, leaseMillis: 60_000 });
  const attached = attach?.(queue, pool);
  try {
    await pool.start();
    const start = performance.now();
    queue.submitMany(Array.from({ length: jobs }, () => ({ type: 'noop' })));
    await pool.drain();
    const millis = performance.now() - start;
    await pool.close(); // flushes every thread's last batch of events
    const succeeded = queue.stats().succeeded;
    if (succeeded !== jobs) notes.push(`${name}: ${succeeded} jobs SUCCEEDED, expected ${jobs}`);
    const wrong = await attached?.check();
    if (wrong !== undefined) notes.push(`${name}: ${wrong}`);
    return millis;
  } finally {
    attached?.detach();
    await pool.close();
    queue.close();
  }
}
