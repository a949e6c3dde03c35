/**
 * Suite "pool-images": real CPU-bound work through the pool, the design
 * card's first user — PNG thumbnails with jimp (bench/thumbnail-task.mjs:
 * read a file, decode, resize, encode), THREADS threads, a WorkerPool on the
 * in-memory JobQueue against piscina. A run hands JOBS thumbnails to the pool
 * at once (submitMany and `finished` of each; piscina: `run` of each) and
 * times until the last is done. Cases alternate run by run, so that the
 * load of a shared machine falls on both alike; medians of RUNS runs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../dist/index.js';
import { renderSource } from '../dist/cli/images.js';
import { MiB, QUICK } from './conditions.js';
import { type Suite, atLeast, formatRate, formatRatio, median } from './report.js';
import { interleavedRuns } from './rounds.js';

const THREADS = 2;
const JOBS = QUICK ? 20 : 60;
const RUNS = QUICK ? 2 : 7;
/** Source images: SOURCES different ones, SIDE × SIDE pixels each. */
const SOURCES = 8;
const SIDE = 320;
/** The bound: leasehold's rate at least piscina's. */
const TARGET = 1;
const TASK = new URL('./thumbnail-task.mjs', import.meta.url);

interface Peer {
  readonly name: string;
  readonly run: (paths: readonly string[]) => Promise<void>;
  readonly close: () => Promise<void>;
}

export const poolImages: Suite = {
  id: 'pool-images',
  title: `image work: ${JOBS} PNG thumbnails (jimp) per run, ${THREADS} threads, WorkerPool vs piscina`,
  config: {
    'pool-images: work': `decode a ${SIDE}×${SIDE} PNG (${SOURCES} different sources), resize to 160 wide, encode (jimp), per job`,
    'pool-images: runs': `${RUNS} timed per case after one warmup, alternating; median thumbnails/s`,
    'pool-images: leasehold': 'WorkerPool on an in-memory JobQueue: submitMany of the run, then finished() of each',
    'pool-images: piscina': 'piscina.run() of each, all at once',
  },
  async run() {
    const dir = mkdtempSync(join(os.tmpdir(), 'leasehold-bench-images-'));
    const peers: Peer[] = [];
    try {
      const sources: string[] = [];
      for (let seed = 0; seed < SOURCES; seed++) {
        const path = join(dir, `source-${seed}.png`);
        writeFileSync(path, await renderSource(SIDE, seed + 1));
        sources.push(path);
      }
      const paths = Array.from({ length: JOBS }, (_, i) => sources[i % SOURCES]!);
      const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { capacity: JOBS * (RUNS + 2), arenaBytes: 8 * MiB });
      const pool = new WorkerPool(queue, { handlers: TASK, threads: THREADS });
      await pool.start();
      peers.push({
        name: 'leasehold WorkerPool (memory)',
        run: async (jobs) => {
          const ids = queue.submitMany(jobs.map((path) => ({ type: 'thumbnail', payload: path })));
          await Promise.all(ids.map((id) => queue.finished(id)));
        },
        close: () => pool.close(),
      });
      const piscina = new Piscina<string, number>({ filename: TASK.href, minThreads: THREADS, maxThreads: THREADS, idleTimeout: Infinity });
      peers.push({ name: 'piscina', run: async (jobs) => void (await Promise.all(jobs.map((path) => piscina.run(path)))), close: () => piscina.destroy() });
      const times = await interleavedRuns(peers, RUNS, async (peer) => {
        const start = performance.now();
        await peer.run(paths);
        return performance.now() - start;
      });
      const rates = peers.map((peer) => ({ name: peer.name, rate: (JOBS / median(times.get(peer)!)) * 1000 }));
      const [ours, theirs] = rates as [typeof rates[0], typeof rates[0]];
      return {
        tables: [{ title: `thumbnails/s (median of ${RUNS} runs)`, rows: rates.map((r) => ({ case: r.name, 'thumbnails/s': formatRate(r.rate) })) }],
        bars: rates.map((r) => ({ label: r.name, value: r.rate, baseline: r === theirs })),
        unit: 'thumbnails/s',
        ratios: { 'leasehold / piscina': ours.rate / theirs.rate },
        notes: [`leasehold ${formatRatio(ours.rate / theirs.rate)} of piscina's rate`],
        targets: [atLeast('image work rate vs piscina', ours.rate / theirs.rate, TARGET)],
      };
    } finally {
      for (const peer of peers) await peer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
