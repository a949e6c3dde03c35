/**
 * Suite "single": one thread runs a batch of jobs through a fresh queue. Each
 * round (a tinybench iteration) submits JOBS jobs of a 64-byte payload at
 * priority `i % 10`, then polls and completes until the queue is empty. The
 * fresh queue is made before the round's clock starts and closed after it.
 *
 * Peers, in the same run, each on a fresh queue per round too: fastq's
 * promise queue (concurrency 1), JOBS no-op tasks pushed and all awaited, and
 * p-queue (concurrency 1), JOBS no-op tasks added (at the same priorities,
 * which p-queue honours) and all awaited.
 *
 * Beside them a floor (bench/plain-objects.ts): the same round on plain
 * JavaScript objects, the contract's steps without shared memory, showing
 * how near any thread-safe design can come.
 */
import fastq from 'fastq';
import PQueue from 'p-queue';
import { Bench } from 'tinybench';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { BENCH_TIME, QUICK } from './conditions.js';
import { PlainObjectQueue } from './plain-objects.js';
import { type Rates, type Row, type Suite, atLeast, formatRate, formatRatio, opsPerSecond, tinybenchRows } from './report.js';

const JOBS = 10_000;
const PAYLOAD = 'p'.repeat(64);
const PRIORITIES = 10;
const LEASE_MILLIS = 30_000;
/** A round is JOBS jobs, milliseconds long: tinybench's default minimum of 64 rounds would take a long while for the slowest. */
const ROUNDS = { iterations: QUICK ? 3 : 10, warmupIterations: QUICK ? 1 : 3 } as const;

const CASES = {
  leasehold: `leasehold: ${JOBS.toLocaleString('en-US')} × submit, then poll + complete until empty`,
  fastq: `fastq.promise, concurrency 1: ${JOBS.toLocaleString('en-US')} × push, all awaited (peer)`,
  pQueue: `p-queue, concurrency 1: ${JOBS.toLocaleString('en-US')} × add, all awaited (peer)`,
  floor: `floor: the same round on plain objects, no shared memory (not a queue)`,
} as const;

export const singleThread: Suite = {
  id: 'single',
  title: `single thread: ${JOBS.toLocaleString('en-US')} jobs through a fresh queue per round`,
  config: {
    'single: jobs per round': JOBS,
    'single: job': `type "noop", ${PAYLOAD.length}-byte payload, priority i % ${PRIORITIES}`,
    'single: leasehold queue': `fresh per round (untimed), capacity ${JOBS}, other options default`,
    'single: peers': `fastq.promise(async () => {}, 1) and new PQueue({ concurrency: 1 }), fresh per round`,
    'single: floor': 'bench/plain-objects.ts: checks, a clock reading per call, a binary heap, ids, tokens; fresh per round',
    'single: rounds': `tinybench, at least ${ROUNDS.iterations} rounds (${ROUNDS.warmupIterations} warmup) and the time budget`,
  },
  async run() {
    const notes: string[] = [];
    let queue: JobQueue | undefined;
    let fastQueue = fastq.promise(async (_payload: string) => {}, 1);
    let pQueue = new PQueue({ concurrency: 1 });

    const bench = new Bench({ ...BENCH_TIME, ...ROUNDS, throws: true });
    bench.add(CASES.leasehold, () => leaseholdRound(queue!, notes), {
      beforeEach: () => {
        queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000), { capacity: JOBS });
      },
      afterEach: () => queue!.close(),
    });
    bench.add(
      CASES.fastq,
      async () => {
        const done: Promise<void>[] = [];
        for (let i = 0; i < JOBS; i++) done.push(fastQueue.push(PAYLOAD));
        await Promise.all(done);
      },
      { beforeEach: () => void (fastQueue = fastq.promise(async (_payload: string) => {}, 1)) },
    );
    bench.add(
      CASES.pQueue,
      async () => {
        const done: Promise<void>[] = [];
        for (let i = 0; i < JOBS; i++) done.push(pQueue.add(async () => {}, { priority: i % PRIORITIES }));
        await Promise.all(done);
      },
      { beforeEach: () => void (pQueue = new PQueue({ concurrency: 1 })) },
    );
    let plain = new PlainObjectQueue();
    bench.add(CASES.floor, () => plainRound(plain, notes), { beforeEach: () => void (plain = new PlainObjectQueue()) });
    await bench.run();

    const [rounds, fastqRounds, pQueueRounds, floorRounds] = bench.tasks.map(opsPerSecond) as [Rates, Rates, Rates, Rates];
    const jobsPerSecond = (r: Rates): Rates => ({ mean: r.mean * JOBS, median: r.median * JOBS });
    const leasehold = jobsPerSecond(rounds);
    const fastqJobs = jobsPerSecond(fastqRounds);
    const pQueueJobs = jobsPerSecond(pQueueRounds);
    const floorJobs = jobsPerSecond(floorRounds);
    const row = (name: string, rates: Rates): Row => ({
      case: name,
      'jobs/s': formatRate(rates.mean),
      'vs fastq': formatRatio(rates.mean / fastqJobs.mean),
      'vs p-queue': formatRatio(rates.mean / pQueueJobs.mean),
      'jobs/s at median': formatRate(rates.median),
      'vs fastq at median': formatRatio(rates.median / fastqJobs.median),
    });
    return {
      tables: [
        { title: `tinybench (one iteration = one round of ${JOBS.toLocaleString('en-US')} jobs)`, rows: tinybenchRows(bench) },
        {
          title: `summary (jobs/s = ${JOBS.toLocaleString('en-US')} / mean round time; at median = / median round time)`,
          rows: [row(CASES.leasehold, leasehold), row(CASES.fastq, fastqJobs), row(CASES.pQueue, pQueueJobs), row(CASES.floor, floorJobs)],
        },
      ],
      unit: `jobs/s (${JOBS.toLocaleString('en-US')} / mean round time)`,
      bars: [
        { label: 'leasehold submit, poll + complete', value: leasehold.mean },
        { label: 'fastq.promise push + await', value: fastqJobs.mean, baseline: true },
        { label: 'p-queue add + await', value: pQueueJobs.mean, baseline: true },
        { label: 'floor: plain objects, no shared memory', value: floorJobs.mean, baseline: true },
      ],
      ratios: {
        'leasehold / fastq (median)': leasehold.median / fastqJobs.median,
        'leasehold / p-queue (mean)': leasehold.mean / pQueueJobs.mean,
        'leasehold / floor (mean)': leasehold.mean / floorJobs.mean,
        'fastq / floor (mean)': fastqJobs.mean / floorJobs.mean,
      },
      targets: [atLeast('leasehold / fastq.promise, jobs/s (mean)', leasehold.mean / fastqJobs.mean, 1.0)],
      notes: [...new Set(notes)],
    };
  },
};

/** Submits JOBS jobs, then polls and completes until nothing is left; notes a round that did not complete every job once. */
function leaseholdRound(queue: JobQueue, notes: string[]): void {
  for (let i = 0; i < JOBS; i++) queue.submit('noop', PAYLOAD, i % PRIORITIES);
  let completed = 0;
  for (let lease = queue.poll('bench', LEASE_MILLIS); lease !== undefined; lease = queue.poll('bench', LEASE_MILLIS)) {
    queue.complete(lease.jobId, lease.token);
    completed++;
  }
  if (completed !== JOBS) notes.push(`a round completed ${completed} jobs, expected ${JOBS}`);
}

/**
 * leaseholdRound's loop on the floor. Its own function, not leaseholdRound made generic: call sites that
 * saw two classes would be polymorphic, and slow the leasehold row down.
 */
function plainRound(queue: PlainObjectQueue, notes: string[]): void {
  for (let i = 0; i < JOBS; i++) queue.submit('noop', PAYLOAD, i % PRIORITIES);
  let completed = 0;
  for (let lease = queue.poll('bench', LEASE_MILLIS); lease !== undefined; lease = queue.poll('bench', LEASE_MILLIS)) {
    queue.complete(lease.jobId, lease.token);
    completed++;
  }
  if (completed !== JOBS) notes.push(`a floor round completed ${completed} jobs, expected ${JOBS}`);
}
