/**
 * `leasehold bench poll`: how many jobs per second threads of this machine
 * take through a queue, 1 to N threads, in each form of the worker loop —
 * `poll` then `complete`, and `completeAndPoll` (one call per job) on the
 * shared-memory queue; with `--redis-url` also the Redis queue's loops and
 * its batched `pollMany` / `completeManyAndPoll` — beside piscina on the same
 * threads running a task that does nothing, the cost of handing work from
 * the main thread to a thread and back. Handlers do nothing either: this
 * measures the queue. Prints its conditions and a table; `--svg` writes a chart.
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, platform, arch } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { ManualClock } from '../../clock.js';
import { RetryPolicy } from '../../policy.js';
import { JobQueue } from '../../queue.js';
import { RedisJobQueue } from '../../redis/queue.js';
import { table } from '../table.js';
import { lineChart, type ChartSeries } from './svg.js';
import type { BenchThreadData, Form } from './thread.js';

export interface BenchPollOptions {
  /** The most threads: every count from 1 to it is measured. */
  threads: number;
  /** Jobs per measurement. */
  jobs: number;
  /** Leases per call of the batched Redis form. */
  batch: number;
  redisUrl: string | undefined;
  svg: string | undefined;
}

export const kBenchPollDefaults = { threads: Math.min(availableParallelism(), 8), jobs: 20_000, batch: 16 } as const;

interface Case {
  name: string;
  run(threads: number): Promise<number>;
}

const THREAD_URL = new URL('./thread.js', import.meta.url);
const TASK_URL = new URL('./piscina-task.js', import.meta.url);

export async function runBenchPoll(options: BenchPollOptions): Promise<number> {
  const conditions = describeConditions(options);
  console.log(`leasehold bench poll: ${options.jobs} jobs per measurement, 1 to ${options.threads} threads, handlers that do nothing`);
  console.log(conditions);
  const cases: Case[] = [
    { name: 'memory: poll -> complete', run: (n) => measureQueue('memory', 'poll-complete', n, options) },
    { name: 'memory: completeAndPoll', run: (n) => measureQueue('memory', 'completeAndPoll', n, options) },
  ];
  if (options.redisUrl !== undefined) {
    cases.push(
      { name: 'redis: poll -> complete', run: (n) => measureQueue('redis', 'poll-complete', n, options) },
      { name: `redis: completeManyAndPoll x${options.batch}`, run: (n) => measureQueue('redis', 'batch', n, options) },
    );
  }
  cases.push({ name: 'piscina: no-op task (reference)', run: (n) => measurePiscina(n, options.jobs) });

  const series: ChartSeries[] = [];
  for (const c of cases) {
    const points: [number, number][] = [];
    for (let n = 1; n <= options.threads; n++) points.push([n, await c.run(n)]);
    series.push({ name: c.name, points });
    console.log(`  ${c.name}: ${points.map(([n, rate]) => `${n}t ${Math.round(rate)}/s`).join(', ')}`);
  }
  const header = ['jobs per second', ...Array.from({ length: options.threads }, (_, i) => `${i + 1} thread${i === 0 ? '' : 's'}`)];
  console.log(`\n${table([header, ...series.map((s) => [s.name, ...s.points.map(([, rate]) => String(Math.round(rate)))])])}`);
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  if (options.svg !== undefined) {
    writeFileSync(options.svg, lineChart('leasehold bench poll: jobs per second', conditions, series));
    console.log(`chart written to ${options.svg}`);
  }
  return 0;
}

function describeConditions(options: BenchPollOptions): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const load = loadavg().map((l) => l.toFixed(2)).join(' ');
  return `Node ${process.version} on ${platform()} ${arch()}, ${cpu}, ${availableParallelism()} cores, load average ${load}, ${options.jobs} jobs per point`;
}

/** Jobs per second of `threads` threads taking `options.jobs` prefilled jobs from a fresh queue in `form`. */
async function measureQueue(backend: 'memory' | 'redis', form: Form, threads: number, options: BenchPollOptions): Promise<number> {
  const clock = new ManualClock(1_000_000);
  const policy = new RetryPolicy(3, 0, 0);
  const queue = backend === 'memory'
    ? new JobQueue(clock, policy, { capacity: options.jobs + 16 })
    : await RedisJobQueue.connect({ redis: options.redisUrl!, name: `leasehold-bench-poll-${process.pid}-${Date.now()}`, policy, time: clock, capacity: options.jobs + 16 });
  try {
    const jobs = Array.from({ length: options.jobs }, () => ({ type: 'noop', payload: '' }));
    // Prefilled in chunks: the submit is not what is measured.
    for (let i = 0; i < jobs.length; i += 1_000) await queue.submitMany(jobs.slice(i, i + 1_000));
    const start = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    const workerData: BenchThreadData = { backend, handle: queue.share(), form, batch: options.batch, start };
    const workers = Array.from({ length: threads }, () => new Worker(THREAD_URL, { workerData }));
    try {
      const messages = workers.map((w) => messagesOf(w));
      await Promise.all(messages.map((m) => m.next()));
      const began = performance.now();
      // Starts every thread at once (pairs with each thread's Atomics.wait).
      Atomics.store(new Int32Array(start), 0, 1);
      Atomics.notify(new Int32Array(start), 0);
      const done = (await Promise.all(messages.map((m) => m.next()))) as number[];
      const seconds = (performance.now() - began) / 1_000;
      const completed = done.reduce((a, b) => a + b, 0);
      if (completed !== options.jobs) throw new Error(`bench poll: ${completed} of ${options.jobs} jobs were completed (${backend}, ${form}, ${threads} threads)`);
      return completed / seconds;
    } finally {
      await Promise.all(workers.map((w) => w.terminate()));
    }
  } finally {
    await queue.close();
  }
}

/** The messages a worker posts, one `next()` each; an error or an early exit rejects. */
function messagesOf(worker: Worker): { next(): Promise<unknown> } {
  const queued: unknown[] = [];
  const waiting: { resolve: (v: unknown) => void; reject: (e: Error) => void }[] = [];
  let failure: Error | undefined;
  worker.on('message', (m: unknown) => {
    const w = waiting.shift();
    if (w === undefined) queued.push(m);
    else w.resolve(m);
  });
  const fail = (error: Error) => {
    failure = error;
    for (const w of waiting.splice(0)) w.reject(error);
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`bench poll: a thread exited (code ${code}) before it finished`)));
  return {
    next: () => {
      if (queued.length > 0) return Promise.resolve(queued.shift());
      if (failure !== undefined) return Promise.reject(failure);
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
  };
}

/** Tasks per second of a piscina pool of `threads` threads running `jobs` no-op tasks, a few hundred in flight per thread. */
async function measurePiscina(threads: number, jobs: number): Promise<number> {
  const pool = new Piscina({ filename: TASK_URL.href, minThreads: threads, maxThreads: threads, idleTimeout: 60_000 });
  try {
    // Warms every thread up: started and its task module loaded.
    await Promise.all(Array.from({ length: threads * 4 }, () => pool.run(null)));
    const inFlight = threads * 256;
    const began = performance.now();
    let sent = 0;
    const lane = async () => {
      while (sent < jobs) {
        sent++;
        await pool.run(null);
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, jobs) }, lane));
    return jobs / ((performance.now() - began) / 1_000);
  } finally {
    await pool.destroy();
  }
}
