/**
 * Suite "pool-events": what listening to a WorkerPool's events costs. A pool
 * of THREADS threads drains N no-op jobs, once with no listener and once with
 * a listener on `completed` (every job's event then crosses to the main
 * thread, in batches); the target is at least 0.9x the speed without one.
 *
 * Each run starts an idle pool, then times from the submitMany of all N jobs
 * to the drain that sees them all SUCCEEDED. Cases alternate run by run, so a
 * machine getting busier slows both alike; one warmup run each, the table
 * shows the median of RUNS.
 */
import { performance } from 'node:perf_hooks';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../dist/index.js';
import { MiB, QUICK } from './conditions.js';
import { type Row, type Suite, formatRate, formatRatio, median } from './report.js';

const JOBS = QUICK ? 20_000 : 200_000;
const THREADS = 2;
const RUNS = QUICK ? 1 : 5;
const OPTIONS = { capacity: JOBS, arenaBytes: 32 * MiB } as const;
/** The handler module, inline: one no-op job type. */
const HANDLERS = 'data:text/javascript,export function noop() {}';

type Listening = 'none' | 'completed';

export const poolEvents: Suite = {
  id: 'pool-events',
  title: `WorkerPool events: ${THREADS}-thread drain of ${JOBS.toLocaleString('en-US')} no-op jobs, with and without a listener`,
  config: {
    'pool-events: jobs per run': JOBS,
    'pool-events: threads': THREADS,
    'pool-events: runs': `1 warmup + ${RUNS} timed per case, alternating, median reported`,
    'pool-events: listener': "pool.on('completed', () => {}): every job's event reaches the main thread",
  },
  async run() {
    const notes: string[] = [];
    const times: Record<Listening, number[]> = { none: [], completed: [] };
    for (let run = 0; run <= RUNS; run++) {
      for (const listening of ['none', 'completed'] as const) {
        const millis = await drainOnce(listening, notes);
        if (run > 0) times[listening].push(millis);
      }
    }
    const rate = (runs: number[]) => (JOBS / median(runs)) * 1000;
    const ratio = rate(times.completed) / rate(times.none);
    if (ratio < 0.9) notes.push(`with a listener the drain ran at ${formatRatio(ratio)} of its speed without one: below the 0.9x target`);
    const cases = [
      { name: 'no listener', label: 'no listener', runs: times.none },
      { name: "listener on 'completed'", label: 'listener', runs: times.completed },
    ];
    const rows: Row[] = cases.map(({ name, runs }) => ({
      case: name,
      threads: THREADS,
      jobs: JOBS,
      ...Object.fromEntries(runs.map((ms, i) => [`run ${i + 1} ms`, Math.round(ms)])),
      'median ms': Math.round(median(runs)),
      'jobs/s': formatRate(rate(runs)),
      'vs no listener': formatRatio(rate(runs) / rate(times.none)),
    }));
    return {
      tables: [{ title: 'WorkerPool drain, events on and off (jobs/s = jobs / median run time)', rows }],
      unit: 'jobs/s',
      bars: cases.map(({ label, runs }) => ({ label, value: rate(runs), baseline: runs === times.none })),
      ratios: { 'with listener / without': ratio },
      notes,
    };
  },
};

async function drainOnce(listening: Listening, notes: string[]): Promise<number> {
  const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), OPTIONS);
  const pool = new WorkerPool(queue, { handlers: HANDLERS, threads: THREADS, leaseMillis: 60_000 });
  let heard = 0;
  if (listening === 'completed') pool.on('completed', () => void heard++);
  try {
    await pool.start();
    const start = performance.now();
    queue.submitMany(Array.from({ length: JOBS }, () => ({ type: 'noop' })));
    await pool.drain();
    const millis = performance.now() - start;
    await pool.close(); // flushes every thread's last batch of events
    const succeeded = queue.stats().succeeded;
    if (succeeded !== JOBS) notes.push(`${listening}: ${succeeded} jobs SUCCEEDED, expected ${JOBS}`);
    if (listening === 'completed' && heard !== JOBS) notes.push(`the listener heard ${heard} completed events, expected ${JOBS}`);
    return millis;
  } finally {
    await pool.close();
    queue.close();
  }
}
