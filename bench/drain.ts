/**
 * Suite "drain": how fast do two threads empty a queue of no-op jobs?
 *
 * leasehold: N jobs are submitted first; then worker threads (drain-worker.mjs),
 * already attached to the shared queue and parked at a shared-memory barrier,
 * are released at once and each completes a job and leases the next in one call
 * (completeAndPoll, as a WorkerPool thread does) until nothing is pending. The
 * clock runs from the release to the last thread's check-out; the main thread
 * dispatches nothing. Baseline: a piscina pool of as many threads running N
 * no-op tasks, which the main thread hands out one by one.
 *
 * Each case gets one warmup run, then RUNS timed runs; the table shows the median.
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { MiB, QUICK } from './conditions.js';
import { type Row, type Suite, formatRate, formatRatio, median } from './report.js';
import { runAtBarrier } from './threads.js';

const JOBS = QUICK ? 20_000 : 200_000;
const THREADS = 2;
const RUNS = 3;
const PISCINA_BATCH = 10_000;
const OPTIONS = { capacity: JOBS, arenaBytes: 32 * MiB } as const;

interface WorkerReply {
  completed: number;
  emptyPolls: number;
  error: string | null;
}

export const drain: Suite = {
  id: 'drain',
  title: `${THREADS}-thread drain: ${JOBS.toLocaleString('en-US')} no-op jobs`,
  config: {
    'drain: jobs per run': JOBS,
    'drain: threads': `${THREADS} leasehold worker_threads (+1 for the scaling row) vs piscina ${THREADS} threads`,
    'drain: leasehold capacity': OPTIONS.capacity,
    'drain: leasehold arenaBytes': OPTIONS.arenaBytes,
    'drain: runs': `1 warmup + ${RUNS} timed per case, median reported`,
    'drain: piscina': `minThreads = maxThreads = ${THREADS}, Promise.all over pool.run in batches of ${PISCINA_BATCH}`,
  },
  async run() {
    const notes: string[] = [];
    const workers = Array.from({ length: THREADS }, () => new Worker(new URL('./drain-worker.mjs', import.meta.url)));
    let leasehold2: number[];
    let leasehold1: number[];
    try {
      leasehold2 = await timeRuns(() => leaseholdDrain(workers, notes));
      leasehold1 = await timeRuns(() => leaseholdDrain(workers.slice(0, 1), notes));
    } finally {
      await Promise.all(workers.map((worker) => worker.terminate()));
    }

    const pool = new Piscina({
      filename: new URL('./noop-task.mjs', import.meta.url).href,
      minThreads: THREADS,
      maxThreads: THREADS,
      idleTimeout: 60_000,
    });
    let piscina: number[];
    try {
      piscina = await timeRuns(() => piscinaDrain(pool));
    } finally {
      await pool.destroy();
    }

    const rate = (runs: number[]) => (JOBS / median(runs)) * 1000;
    const cases = [
      { name: `leasehold, ${THREADS} threads, completeAndPoll`, label: `leasehold, ${THREADS} threads`, threads: THREADS, runs: leasehold2 },
      { name: `piscina, ${THREADS} threads, pool.run (baseline)`, label: `piscina, ${THREADS} threads (baseline)`, threads: THREADS, runs: piscina },
      { name: 'leasehold, 1 thread (scaling reference)', label: 'leasehold, 1 thread', threads: 1, runs: leasehold1 },
    ];
    const rows: Row[] = cases.map(({ name, threads, runs }) => ({
      case: name,
      threads,
      jobs: JOBS,
      ...Object.fromEntries(runs.map((ms, i) => [`run ${i + 1} ms`, Math.round(ms)])),
      'median ms': Math.round(median(runs)),
      'jobs/s': formatRate(rate(runs)),
      'vs piscina': formatRatio(rate(runs) / rate(piscina)),
    }));
    return {
      tables: [{ title: 'drain (jobs/s = jobs / median run time)', rows }],
      unit: 'jobs/s',
      bars: cases.map(({ label, runs }) => ({ label, value: rate(runs), baseline: runs === piscina })),
      ratios: {
        [`leasehold ${THREADS} threads / piscina ${THREADS} threads`]: rate(leasehold2) / rate(piscina),
        [`leasehold ${THREADS} threads / leasehold 1 thread`]: rate(leasehold2) / rate(leasehold1),
      },
      notes: [...new Set(notes)],
    };
  },
};

/** One warmup run, then RUNS timed runs; returns their times in milliseconds. */
async function timeRuns(drainOnce: () => Promise<number>): Promise<number[]> {
  await drainOnce();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) times.push(await drainOnce());
  return times;
}

async function leaseholdDrain(workers: readonly Worker[], notes: string[]): Promise<number> {
  const queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000), OPTIONS);
  let run: { millis: number; replies: WorkerReply[] };
  let stats: ReturnType<JobQueue['stats']>;
  try {
    for (let i = 0; i < JOBS; i++) queue.submit('noop', '');
    run = await runAtBarrier<WorkerReply>(workers, { handle: queue.share() }, 'drain worker');
    stats = queue.stats();
  } finally {
    queue.close();
  }
  const { millis, replies: results } = run;
  const completed = results.reduce((sum, reply) => sum + reply.completed, 0);
  const emptyPolls = results.reduce((sum, reply) => sum + reply.emptyPolls, 0);
  if (completed !== JOBS || stats.succeeded !== JOBS) {
    notes.push(`${workers.length} thread(s): workers completed ${completed}, stats.succeeded ${stats.succeeded}, expected ${JOBS}`);
  }
  if (emptyPolls > 0) notes.push(`${workers.length} thread(s): poll returned nothing while jobs were pending (${emptyPolls} times in a run)`);
  return millis;
}

async function piscinaDrain(pool: Piscina): Promise<number> {
  const start = performance.now();
  for (let sent = 0; sent < JOBS; sent += PISCINA_BATCH) {
    const batch = Math.min(PISCINA_BATCH, JOBS - sent);
    await Promise.all(Array.from({ length: batch }, () => pool.run(null)));
  }
  return performance.now() - start;
}
