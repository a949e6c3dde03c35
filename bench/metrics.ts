/**
 * Suite "metrics": what `collectMetrics` on a WorkerPool costs its drain. A
 * pool of THREADS threads drains N no-op jobs, once bare and once with its
 * metrics collected into a prom-client registry (then every attempt's event
 * reaches the main thread, where it is counted and timed); the target is at
 * least 0.9x the speed without. The registry is scraped after each drain, off
 * the clock, to check that it counted every job.
 *
 * Cases alternate run by run, so a machine getting busier slows both alike;
 * one warmup run each, the table shows the median of RUNS.
 */
import { performance } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { JobQueue, RetryPolicy, WorkerPool, collectMetrics, systemClock } from '../dist/index.js';
import { MiB, QUICK } from './conditions.js';
import { atLeast, formatRate, formatRatio, median, type Row, type Suite } from './report.js';

const JOBS = QUICK ? 20_000 : 200_000;
const THREADS = 2;
const RUNS = QUICK ? 1 : 5;
const TARGET = 0.9;
const OPTIONS = { capacity: JOBS, arenaBytes: 32 * MiB } as const;
const HANDLERS = 'data:text/javascript,export function noop() {}';
const COMPLETED = /^leasehold_jobs_completed_total\{queue="bench",type="noop"\} (\d+)$/m;

const CASES = { bare: 'no metrics', collected: 'collectMetrics' } as const;
type Case = keyof typeof CASES;

export const metrics: Suite = {
  id: 'metrics',
  title: `Prometheus metrics: ${THREADS}-thread drain of ${JOBS.toLocaleString('en-US')} no-op jobs, with and without collectMetrics`,
  config: {
    'metrics: jobs per run': JOBS,
    'metrics: threads': THREADS,
    'metrics: runs': `1 warmup + ${RUNS} timed per case, alternating, median reported`,
    'metrics: collected': 'collectMetrics({ queue, pool }, new Registry()) before start; one scrape after the drain, untimed',
  },
  async run() {
    const notes: string[] = [];
    const times: Record<Case, number[]> = { bare: [], collected: [] };
    for (let run = 0; run <= RUNS; run++) {
      for (const which of ['bare', 'collected'] as const) {
        const millis = await timedDrain(which, notes);
        if (run > 0) times[which].push(millis);
      }
    }
    const rate = (runs: number[]) => (JOBS / median(runs)) * 1000;
    const ratio = rate(times.collected) / rate(times.bare);
    const rows: Row[] = (['bare', 'collected'] as const).map((which) => ({
      case: CASES[which],
      threads: THREADS,
      jobs: JOBS,
      'median ms': Math.round(median(times[which])),
      'jobs/s': formatRate(rate(times[which])),
      'vs no metrics': formatRatio(rate(times[which]) / rate(times.bare)),
    }));
    return {
      tables: [{ title: 'WorkerPool drain, metrics off and on (jobs/s = jobs / median run time)', rows }],
      unit: 'jobs/s',
      bars: (['bare', 'collected'] as const).map((which) => ({ label: CASES[which], value: rate(times[which]), baseline: which === 'bare' })),
      ratios: { 'collectMetrics / without': ratio },
      notes,
      targets: [atLeast('drain with collectMetrics vs without', ratio, TARGET)],
    };
  },
};

async function timedDrain(which: Case, notes: string[]): Promise<number> {
  const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), OPTIONS);
  const pool = new WorkerPool(queue, { handlers: HANDLERS, threads: THREADS, leaseMillis: 60_000 });
  const registry = new Registry();
  const collected = which === 'collected' ? collectMetrics({ queue, pool, name: 'bench' }, registry) : undefined;
  try {
    await pool.start();
    const start = performance.now();
    queue.submitMany(Array.from({ length: JOBS }, () => ({ type: 'noop' })));
    await pool.drain();
    const millis = performance.now() - start;
    await pool.close(); // the threads' last events arrive before it resolves
    if (collected !== undefined) {
      const counted = Number(COMPLETED.exec(await registry.metrics())?.[1] ?? 0);
      if (counted !== JOBS) notes.push(`collectMetrics counted ${counted} completed jobs, expected ${JOBS}`);
    }
    return millis;
  } finally {
    collected?.close();
    await pool.close();
    queue.close();
  }
}
