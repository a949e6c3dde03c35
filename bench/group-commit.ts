/**
 * Suite "group": group commit, the journal's answer to many threads writing at
 * once. Worker threads (journal-worker.mjs) attach to one journaled queue,
 * park at a barrier, and once released repeat a durable call for RUN_MILLIS;
 * the rate is the jobs all of them finished over that time.
 *
 * - synchronous FULL (an fsync per commit), durable submits: THREADS threads
 *   against 1 thread. Without group commit every submit pays its own fsync,
 *   so more threads cannot go faster than one; with it, one fsync carries
 *   every thread's submits.
 * - synchronous NORMAL, a job's whole life (submit → poll → complete) on
 *   THREADS threads against 1: the completes and submits of the threads
 *   share commits.
 *
 * One warmup round, then RUNS timed rounds, each running every case once; the
 * table shows the median.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { MiB, QUICK } from './conditions.js';
import { type Row, type Suite, formatRate, formatRatio, median } from './report.js';
import { interleavedRuns } from './rounds.js';
import { runAtBarrier } from './threads.js';

const THREADS = 4;
const RUN_MILLIS = QUICK ? 300 : 2_000;
const RUNS = 3;
const OPTIONS = { capacity: 1 << 20, arenaBytes: 128 * MiB } as const;

type Mode = 'submit' | 'life';
type Synchronous = 'NORMAL' | 'FULL';

interface WorkerReply {
  jobs: number;
  error: string | null;
}

interface Case {
  name: string;
  synchronous: Synchronous;
  mode: Mode;
  threads: number;
}

const CASES: readonly Case[] = [
  { name: 'durable submit, synchronous FULL, 1 thread', synchronous: 'FULL', mode: 'submit', threads: 1 },
  { name: `durable submit, synchronous FULL, ${THREADS} threads at once`, synchronous: 'FULL', mode: 'submit', threads: THREADS },
  { name: 'submit → poll → complete, synchronous NORMAL, 1 thread', synchronous: 'NORMAL', mode: 'life', threads: 1 },
  { name: `submit → poll → complete, synchronous NORMAL, ${THREADS} threads at once`, synchronous: 'NORMAL', mode: 'life', threads: THREADS },
];

export const groupCommit: Suite = {
  id: 'group',
  title: `group commit: ${THREADS} threads writing one journal at once`,
  config: {
    'group: threads': `${THREADS} worker_threads against 1, on one journaled queue`,
    'group: run': `${RUN_MILLIS} ms per run; 1 warmup + ${RUNS} timed rounds, every case once per round, median reported`,
    'group: files': 'one fresh SQLite file per run under os.tmpdir(), WAL; deleted afterwards',
    'group: job': 'type "noop", payload "x"',
  },
  async run() {
    const dir = mkdtempSync(join(os.tmpdir(), 'leasehold-bench-group-'));
    const workers = Array.from({ length: THREADS }, () => new Worker(new URL('./journal-worker.mjs', import.meta.url)));
    const notes: string[] = [];
    let rates: Map<Case, number[]>;
    let file = 0;
    try {
      rates = await interleavedRuns(CASES, RUNS, (c) => timedRun(join(dir, `run-${file++}.sqlite`), c, workers.slice(0, c.threads), notes));
    } finally {
      await Promise.all(workers.map((worker) => worker.terminate()));
      rmSync(dir, { recursive: true, force: true });
    }
    const rate = (c: Case) => median(rates.get(c)!);
    const [full1, fullN, life1, lifeN] = CASES as [Case, Case, Case, Case];
    const rows: Row[] = CASES.map((c) => ({
      case: c.name,
      ...Object.fromEntries(rates.get(c)!.map((jobsPerSecond, i) => [`run ${i + 1} jobs/s`, formatRate(jobsPerSecond)])),
      'jobs/s (median)': formatRate(rate(c)),
      'vs 1 thread': formatRatio(rate(c) / rate(c.mode === 'submit' ? full1 : life1)),
    }));
    return {
      tables: [{ title: 'group commit (jobs/s = jobs all threads finished / run time; median of the runs)', rows }],
      unit: 'jobs/s',
      bars: CASES.map((c) => ({ label: c.name, value: rate(c), baseline: c.threads === 1 })),
      ratios: {
        [`FULL submits: ${THREADS} threads / 1 thread`]: rate(fullN) / rate(full1),
        [`NORMAL lifecycle: ${THREADS} threads / 1 thread`]: rate(lifeN) / rate(life1),
      },
      notes: [...new Set(notes)],
    };
  },
};

/** One run of `c` on a fresh journal; returns jobs per second over the run. */
async function timedRun(path: string, c: Case, workers: readonly Worker[], notes: string[]): Promise<number> {
  const queue = JobQueue.open(path, systemClock, new RetryPolicy(3, 100, 1_000), { ...OPTIONS, synchronous: c.synchronous });
  try {
    const run = await runAtBarrier<WorkerReply>(workers, { handle: queue.share(), mode: c.mode, millis: RUN_MILLIS }, 'journal worker');
    const seconds = run.millis / 1000;
    const results = run.replies;
    const jobs = results.reduce((sum, reply) => sum + reply.jobs, 0);
    const stats = queue.stats();
    const expected = c.mode === 'submit' ? { pending: jobs, succeeded: 0 } : { pending: 0, succeeded: jobs };
    if (stats.pending !== expected.pending || stats.succeeded !== expected.succeeded) {
      notes.push(`${c.name}: the queue holds ${JSON.stringify(stats)}, expected ${JSON.stringify(expected)}`);
    }
    return jobs / seconds;
  } finally {
    queue.close();
  }
}
