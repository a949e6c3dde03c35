/**
 * Suite "pool-events": what listening to a WorkerPool's events costs. A pool
 * of THREADS threads drains N no-op jobs, once with no listener and once with
 * a listener on `completed` (every job's event then crosses to the main
 * thread, in batches); the target (checked like every suite's) is at least
 * 0.9x the speed without one.
 *
 * The drain is bench/pool-drain.ts's (alternating runs, one warmup each); the
 * table shows the median of DRAIN_RUNS.
 */
import { QUICK } from './conditions.js';
import { DRAIN_RUNS, alternatingDrains, type Attach } from './pool-drain.js';
import { type Row, type Suite, atLeast, formatRate, formatRatio, median } from './report.js';

const JOBS = QUICK ? 20_000 : 200_000;
const THREADS = 2;
/** The bound: a no-op drain with a listener keeps at least this share of its speed without one. */
const TARGET = 0.9;

/** A listener on `completed` that counts what it hears. */
const listener: Attach = (_queue, pool) => {
  let heard = 0;
  const count = (): void => void heard++;
  pool.on('completed', count);
  return {
    check: () => (heard === JOBS ? undefined : `the listener heard ${heard} completed events, expected ${JOBS}`),
    detach: () => pool.off('completed', count),
  };
};

export const poolEvents: Suite = {
  id: 'pool-events',
  title: `WorkerPool events: ${THREADS}-thread drain of ${JOBS.toLocaleString('en-US')} no-op jobs, with and without a listener`,
  config: {
    'pool-events: jobs per run': JOBS,
    'pool-events: threads': THREADS,
    'pool-events: runs': `1 warmup + ${DRAIN_RUNS} timed per case, alternating, median reported`,
    'pool-events: listener': "pool.on('completed', () => {}): every job's event reaches the main thread",
  },
  async run() {
    const notes: string[] = [];
    const times = await alternatingDrains({ none: undefined, completed: listener }, DRAIN_RUNS, JOBS, THREADS, notes);
    const rate = (runs: number[]) => (JOBS / median(runs)) * 1000;
    const ratio = rate(times.completed) / rate(times.none);
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
      targets: [atLeast('drain with a listener on completed vs without', ratio, TARGET)],
    };
  },
};
