/**
 * Suite "single": the cost of one job's round trip in one thread: submit, poll,
 * complete. Baseline: fastq's promise queue, pushing a no-op async task and
 * awaiting it, the cheapest in-process "queue a job and see it done".
 */
import fastq from 'fastq';
import { Bench } from 'tinybench';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { BENCH_TIME, MiB } from './conditions.js';
import { type Rates, type Row, type Suite, formatRate, formatRatio, opsPerSecond, tinybenchRows } from './report.js';

const OPTIONS = { capacity: 65_536, arenaBytes: 16 * MiB } as const;
const LEASE_MILLIS = 30_000;

export const singleThread: Suite = {
  id: 'single',
  title: 'single thread: one job per iteration',
  config: {
    'single: leasehold capacity': OPTIONS.capacity,
    'single: leasehold arenaBytes': OPTIONS.arenaBytes,
    'single: payload': '"x" (1 byte), type "noop", priority 0',
    'single: history': 'table starts full of finished jobs, so each submit evicts one',
    'single: baseline': 'fastq.promise(async () => {}, 1): push + await',
  },
  async run() {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000), OPTIONS);
    // Fill the table with finished jobs first: the steady state of a queue that has run a while.
    for (let i = 0; i < OPTIONS.capacity; i++) roundTrip(queue);
    const baseline = fastq.promise(async (_task: null) => {}, 1);

    const bench = new Bench({ ...BENCH_TIME, throws: true });
    bench.add('leasehold submit + poll + complete', () => roundTrip(queue));
    bench.add('fastq.promise push + await (baseline)', async () => {
      await baseline.push(null);
    });
    await bench.run();

    const [leasehold, fastqTask] = bench.tasks.map(opsPerSecond) as [Rates, Rates];
    const stats = queue.stats();
    await queue.close();

    const notes: string[] = [];
    if (stats.pending !== 0 || stats.running !== 0) {
      notes.push(`queue not empty after the run: ${JSON.stringify(stats)}`);
    }
    return {
      tables: [
        { title: 'tinybench', rows: tinybenchRows(bench) },
        {
          title: 'summary (ops/s = 1 / mean latency; at median = 1 / median latency)',
          rows: [
            { case: 'leasehold submit + poll + complete', ...summary(leasehold, fastqTask) },
            { case: 'fastq.promise push + await (baseline)', ...summary(fastqTask, fastqTask) },
          ],
        },
      ],
      unit: 'jobs/s (1 / mean latency)',
      bars: [
        { label: 'leasehold submit+poll+complete', value: leasehold.mean },
        { label: 'fastq push+await (baseline)', value: fastqTask.mean, baseline: true },
      ],
      ratios: { 'leasehold / fastq (mean)': leasehold.mean / fastqTask.mean, 'leasehold / fastq (median)': leasehold.median / fastqTask.median },
      notes,
    };
  },
};

function roundTrip(queue: JobQueue): void {
  queue.submit('noop', 'x');
  const lease = queue.poll('bench', LEASE_MILLIS);
  if (lease === undefined) throw new Error('poll found nothing right after a submit');
  queue.complete(lease.jobId, lease.token);
}

function summary(rates: Rates, baseline: Rates): Row {
  return {
    'ops/s': formatRate(rates.mean),
    'vs fastq': formatRatio(rates.mean / baseline.mean),
    'ops/s at median': formatRate(rates.median),
    'vs fastq at median': formatRatio(rates.median / baseline.median),
  };
}
