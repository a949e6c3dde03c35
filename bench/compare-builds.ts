/**
 * `npx tsx bench/compare-builds.ts A B [--work MICROS] [--rounds N]`: two
 * builds of the library, side by side in one process, on the drains of the
 * "work" suite. A and B are directories holding a build: a copy of dist/
 * made before a change (inside the project, e.g. dist-before/, so that its
 * imports find node_modules), and dist/ itself, say. For a change to the worker path
 * whose effect is a few percent: the suites' spread from run to run is wider
 * than that, and here every round runs every case of both builds in turn.
 *
 * Cases per build: 1 worker thread, 2 on one queue, and 2 with a queue each
 * (no memory shared: the machine's ceiling). 100,000 jobs, each with
 * MICROS µs of busy work (default 2; 0 for no-op jobs, as the "drain" suite
 * has); 4 warmup rounds, then N timed ones (default 10); medians.
 * Prints results only; it is not a suite of `npm run bench` and saves nothing.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { calibrate } from './busy-work.js';
import { type Build, type Sharing, drainWithThreads } from './leasehold-drain.js';
import { median } from './report.js';
import { interleavedRuns } from './rounds.js';

const JOBS = 100_000;
const WARMUPS = 4;

interface Case {
  readonly build: number;
  readonly threads: number;
  readonly sharing: Sharing;
}

async function main(): Promise<void> {
  const { dirs, micros, rounds } = parseCommandLine(process.argv.slice(2));
  const urls = dirs.map((dir) => pathToFileURL(resolve(dir, 'index.js')).href);
  const builds: Build[] = await Promise.all(urls.map(async (url) => ({ library: await import(url) })));
  // Each build's threads load that build: a queue's layout may differ between them.
  const workers = urls.map((library) => [0, 1].map(() => new Worker(new URL('./drain-worker.mjs', import.meta.url), { workerData: { library } })));
  const iterations = micros > 0 ? calibrate(micros).iterations : 0;
  const cases: Case[] = builds.flatMap((_, build) =>
    ([[1, 'one queue'], [2, 'one queue'], [2, 'a queue each']] as const).map(([threads, sharing]) => ({ build, threads, sharing })),
  );
  const notes: string[] = [];
  let times: Map<Case, number[]>;
  try {
    times = await interleavedRuns(
      cases,
      rounds,
      (c) => drainWithThreads(workers[c.build]!.slice(0, c.threads), { build: builds[c.build]!, jobs: JOBS, loop: 'plain', spinIterations: iterations }, notes, c.sharing),
      WARMUPS,
    );
  } finally {
    await Promise.all(workers.flat().map((worker) => worker.terminate()));
  }
  const microsPerJob = (c: Case) => (median(times.get(c)!) * 1000 * c.threads) / JOBS;
  const rows = builds.map((_, build) => {
    const [one, two, each] = cases.filter((c) => c.build === build).map(microsPerJob) as [number, number, number];
    return {
      build: dirs[build],
      'µs/job, 1 thread': one.toFixed(3),
      'µs/job/thread, 2 on one queue': two.toFixed(3),
      'µs/job/thread, 2 with a queue each': each.toFixed(3),
      '2 threads / 1': ((2 * one) / two).toFixed(3),
      'ceiling / 1': ((2 * one) / each).toFixed(3),
    };
  });
  console.log(`${JOBS.toLocaleString('en-US')} jobs of ${micros} µs busy work (${iterations} spin iterations), ${rounds} rounds after ${WARMUPS} warmups, medians`);
  console.table(rows);
  for (const note of new Set(notes)) console.log(`NOTE: ${note}`);
}

function parseCommandLine(argv: readonly string[]): { dirs: string[]; micros: number; rounds: number } {
  const dirs: string[] = [];
  let micros = 2;
  let rounds = 10;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--work') micros = Number(argv[++i]);
    else if (arg === '--rounds') rounds = Number(argv[++i]);
    else dirs.push(arg);
  }
  if (dirs.length !== 2 || !(micros >= 0) || !Number.isInteger(rounds) || rounds < 1) {
    throw new Error('usage: npx tsx bench/compare-builds.ts BUILD_A BUILD_B [--work MICROS] [--rounds N]');
  }
  return { dirs, micros, rounds };
}

await main();
