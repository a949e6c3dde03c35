/**
 * Suite "single": one thread runs rounds of jobs through a queue. Each round
 * (a tinybench iteration) submits JOBS jobs of a 64-byte payload at priority
 * `i % 10`, then polls and completes until the queue is empty
 * (single-round.ts). Three leasehold rows:
 *
 * - a fresh queue per round, made before the round's clock starts and closed
 *   after it;
 * - a long-lived queue at capacity: one queue of capacity JOBS, made once
 *   and run through a round before any is timed, so that it holds JOBS
 *   finished jobs and every submit of every round evicts one;
 * - a fresh queue in a process that has freed earlier queues: the round in a
 *   child process (fresh-queue-child.ts) that made, used and closed big
 *   queues first, so that the queue's pages are touched for the first time.
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
import { fork } from 'node:child_process';
import { once } from 'node:events';
import fastq from 'fastq';
import PQueue from 'p-queue';
import { Bench } from 'tinybench';
import type { JobQueue } from '../dist/index.js';
import { BENCH_TIME, QUICK } from './conditions.js';
import { PlainObjectQueue } from './plain-objects.js';
import { type Rates, type Row, type Suite, atLeast, formatRate, formatRatio, median, opsPerSecond, tinybenchRows } from './report.js';
import { JOBS, LEASE_MILLIS, PAYLOAD, PRIORITIES, leaseholdRound, roundQueue } from './single-round.js';

/** A round is JOBS jobs, milliseconds long: tinybench's default minimum of 64 rounds would take a long while for the slowest. */
const ROUNDS = { iterations: QUICK ? 3 : 10, warmupIterations: QUICK ? 1 : 3 } as const;
/** Timed rounds of the child that has freed earlier queues. */
const FREED_ROUNDS = QUICK ? 3 : 10;

const CASES = {
  leasehold: `leasehold, fresh queue: ${JOBS.toLocaleString('en-US')} × submit, then poll + complete until empty`,
  longLived: `leasehold, long-lived queue at capacity: the same round, every submit evicts a finished job`,
  freed: `leasehold, fresh queue in a process that freed earlier queues: the same round (child process)`,
  fastq: `fastq.promise, concurrency 1: ${JOBS.toLocaleString('en-US')} × push, all awaited (peer)`,
  pQueue: `p-queue, concurrency 1: ${JOBS.toLocaleString('en-US')} × add, all awaited (peer)`,
  floor: `floor: the same round on plain objects, no shared memory (not a queue)`,
} as const;

export const singleThread: Suite = {
  id: 'single',
  title: `single thread: ${JOBS.toLocaleString('en-US')} jobs per round, through a fresh queue, a long-lived one at capacity, and a fresh one after others were freed`,
  config: {
    'single: jobs per round': JOBS,
    'single: job': `type "noop", ${PAYLOAD.length}-byte payload, priority i % ${PRIORITIES}`,
    'single: leasehold fresh queue': `fresh per round (untimed), capacity ${JOBS}, other options default`,
    'single: leasehold long-lived queue': `one queue of capacity ${JOBS}, run through one round before timing: it holds ${JOBS} finished jobs, every submit evicts one`,
    'single: leasehold after freed queues': `child process (--expose-gc): JIT warmed, 4 queues of the default capacity used, closed and collected; then ${FREED_ROUNDS} rounds, each on a fresh queue (untimed), closed and collected after`,
    'single: peers': `fastq.promise(async () => {}, 1) and new PQueue({ concurrency: 1 }), fresh per round`,
    'single: floor': 'bench/plain-objects.ts: checks, a clock reading per call, a binary heap, ids, tokens; fresh per round',
    'single: rounds': `tinybench, at least ${ROUNDS.iterations} rounds (${ROUNDS.warmupIterations} warmup) and the time budget`,
  },
  async run() {
    const notes: string[] = [];
    let queue: JobQueue | undefined;
    let fastQueue = fastq.promise(async (_payload: string) => {}, 1);
    let pQueue = new PQueue({ concurrency: 1 });
    const longLived = roundQueue();
    // Fills it to capacity with finished jobs: from here on every submit evicts one.
    leaseholdRound(longLived, notes);

    const bench = new Bench({ ...BENCH_TIME, ...ROUNDS, throws: true });
    bench.add(CASES.leasehold, () => leaseholdRound(queue!, notes), {
      beforeEach: () => void (queue = roundQueue()),
      afterEach: () => queue!.close(),
    });
    bench.add(CASES.longLived, () => leaseholdRound(longLived, notes));
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
    const evicting = longLived.stats();
    if (evicting.succeeded !== JOBS) notes.push(`the long-lived queue held ${evicting.succeeded} finished jobs, expected ${JOBS} (every submit evicting one)`);
    longLived.close();
    const freedMillis = await roundsAfterFreedQueues(notes);

    const jobsPerSecond = (r: Rates): Rates => ({ mean: r.mean * JOBS, median: r.median * JOBS });
    const [fresh, evicted, fastqJobs, pQueueJobs, floorJobs] = bench.tasks.map((task) => jobsPerSecond(opsPerSecond(task))) as [Rates, Rates, Rates, Rates, Rates];
    const meanMillis = freedMillis.reduce((sum, ms) => sum + ms, 0) / freedMillis.length;
    const afterFreed: Rates = { mean: (JOBS / meanMillis) * 1000, median: (JOBS / median(freedMillis)) * 1000 };
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
        { title: 'fresh queue in a process that freed earlier queues: round times (ms)', rows: [Object.fromEntries(freedMillis.map((ms, i) => [`round ${i + 1}`, ms.toFixed(1)]))] },
        {
          title: `summary (jobs/s = ${JOBS.toLocaleString('en-US')} / mean round time; at median = / median round time)`,
          rows: [
            row(CASES.leasehold, fresh),
            row(CASES.longLived, evicted),
            row(CASES.freed, afterFreed),
            row(CASES.fastq, fastqJobs),
            row(CASES.pQueue, pQueueJobs),
            row(CASES.floor, floorJobs),
          ],
        },
      ],
      unit: `jobs/s (${JOBS.toLocaleString('en-US')} / mean round time)`,
      bars: [
        { label: 'leasehold, fresh queue', value: fresh.mean },
        { label: 'leasehold, long-lived queue at capacity', value: evicted.mean },
        { label: 'leasehold, fresh queue after freed ones', value: afterFreed.mean },
        { label: 'fastq.promise push + await', value: fastqJobs.mean, baseline: true },
        { label: 'p-queue add + await', value: pQueueJobs.mean, baseline: true },
        { label: 'floor: plain objects, no shared memory', value: floorJobs.mean, baseline: true },
      ],
      ratios: {
        'leasehold fresh / fastq (median)': fresh.median / fastqJobs.median,
        'leasehold long-lived / fastq (median)': evicted.median / fastqJobs.median,
        'leasehold after freed queues / fastq (median)': afterFreed.median / fastqJobs.median,
        'leasehold fresh / p-queue (mean)': fresh.mean / pQueueJobs.mean,
        'leasehold fresh / floor (mean)': fresh.mean / floorJobs.mean,
        'fastq / floor (mean)': fastqJobs.mean / floorJobs.mean,
      },
      targets: [
        atLeast('leasehold long-lived queue at capacity / fastq.promise, jobs/s (mean)', evicted.mean / fastqJobs.mean, 0.6),
        atLeast('leasehold fresh queue after freed queues / fastq.promise, jobs/s (mean)', afterFreed.mean / fastqJobs.mean, 0.3),
      ],
      notes: [...new Set(notes)],
    };
  },
};

/** Round times (ms) of fresh queues in a child process that has freed earlier queues (fresh-queue-child.ts). */
async function roundsAfterFreedQueues(notes: string[]): Promise<number[]> {
  // The parent's execArgv carries tsx's loader, which the child's TypeScript needs.
  const child = fork(new URL('./fresh-queue-child.ts', import.meta.url), [String(FREED_ROUNDS)], { execArgv: [...process.execArgv, '--expose-gc'] });
  let reply: { millis: number[]; notes: string[] } | undefined;
  child.on('message', (message: typeof reply) => void (reply = message));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (reply === undefined) throw new Error(`fresh-queue-child exited with ${String(code)} before its reply`);
  notes.push(...reply.notes);
  return reply.millis;
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
