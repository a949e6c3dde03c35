/**
 * Suite "metrics": what `collectMetrics` on a WorkerPool costs its drain. A
 * pool of THREADS threads drains N no-op jobs, once bare and once with its
 * metrics collected into a prom-client registry (then every attempt's event
 * reaches the main thread, where it is counted and timed); the target is at
 * least 0.9x the speed without. The registry is scraped after each drain, off
 * the clock, to check that it counted every job.
 *
 * The drain is bench/pool-drain.ts's (alternating runs, one warmup each); the
 * table shows the median of DRAIN_RUNS.
 */
import { Registry } from 'prom-client';
import { collectMetrics } from '../dist/index.js';
import { QUICK } from './conditions.js';
import { DRAIN_RUNS, alternatingDrains, type Attach } from './pool-drain.js';
import { atLeast, formatRate, formatRatio, median, type Row, type Suite } from './report.js';

const JOBS = QUICK ? 20_000 : 200_000;
const THREADS = 2;
const TARGET = 0.9;
const COMPLETED = /^leasehold_jobs_completed_total\{queue="bench",type="noop"\} (\d+)$/m;

/** collectMetrics into a registry of its own; the check scrapes it. */
const collected: Attach = (queue, pool) => {
  const registry = new Registry();
  const metrics = collectMetrics({ queue, pool, name: 'bench' }, registry);
  return {
    async check() {
      const counted = Number(COMPLETED.exec(await registry.metrics())?.[1] ?? 0);
      return counted === JOBS ? undefined : `collectMetrics counted ${counted} completed jobs, expected ${JOBS}`;
    },
    detach: () => metrics.close(),
  };
};

const CASES = { bare: 'no metrics', collected: 'collectMetrics' } as const;

export const metrics: Suite = {
  id: 'metrics',
  title: `Prometheus metrics: ${THREADS}-thread drain of ${JOBS.toLocaleString('en-US')} no-op jobs, with and without collectMetrics`,
  config: {
    'metrics: jobs per run': JOBS,
    'metrics: threads': THREADS,
    'metrics: runs': `1 warmup + ${DRAIN_RUNS} timed per case, alternating, median reported`,
    'metrics: collected': 'collectMetrics({ queue, pool }, new Registry()) before start; one scrape after the drain, untimed',
  },
  async run() {
    const notes: string[] = [];
    const times = await alternatingDrains({ bare: undefined, collected }, DRAIN_RUNS, JOBS, THREADS, notes);
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
