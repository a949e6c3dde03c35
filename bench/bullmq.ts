/**
 * BullMQ as a baseline: one run of no-op jobs through a BullMQ Queue and
 * Worker on a given Redis server, checked against BullMQ's own counts.
 *
 * BullMQ's defaults stand, as a user who sets nothing gets them: completed
 * jobs are kept (`removeOnComplete` unset), one attempt per job, a lock of
 * 30 s renewed in the background, stalled-job checks every 30 s, events
 * written to the queue's event stream.
 */
import { createRequire } from 'node:module';
import { Queue, Worker } from 'bullmq';

export const BULLMQ_VERSION = (createRequire(import.meta.url)('bullmq/package.json') as { version: string }).version;

export interface Load {
  /** Jobs per run. */
  readonly jobs: number;
  /** Jobs in flight at once: the Worker's `concurrency`. */
  readonly concurrency: number;
  /** Jobs per `addBulk` call. */
  readonly batch: number;
  /** Each job's data; BullMQ stores it as JSON. */
  readonly payload: string;
}

/**
 * What a run times.
 * - `drain`: every job is added first (untimed); the clock runs from the
 *   worker's start to the last completion.
 * - `end-to-end`: the clock runs from the first add to the last completion;
 *   one producer adds the batches one after another while the worker,
 *   started just before, processes them.
 */
export type Timed = 'drain' | 'end-to-end';

/** Times a run: `start` just before the timed part, `stop` right after it (the caller keeps the reading). */
export interface Stopwatch {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** One run on a fresh queue named `name` at `url`, timed by `watch`. Throws unless every job completed exactly once. */
export async function bullmqRun(url: string, name: string, timed: Timed, load: Load, watch: Stopwatch): Promise<void> {
  const connection = { url, skipVersionCheck: true };
  const queue = new Queue(name, { connection });
  const seen = new Set<string>();
  let resolveAll!: () => void;
  let rejectAll!: (error: Error) => void;
  const allDone = new Promise<void>((resolve, reject) => {
    resolveAll = resolve;
    rejectAll = reject;
  });
  // Handled here so that a failure before it is awaited is not an unhandled rejection; awaiting it still throws.
  allDone.catch(() => undefined);
  const worker = new Worker(name, async () => undefined, { connection, concurrency: load.concurrency, autorun: false });
  worker.on('completed', (job) => {
    if (job.id === undefined || seen.has(job.id)) return rejectAll(new Error(`BullMQ completed job ${job.id} twice`));
    seen.add(job.id);
    if (seen.size === load.jobs) resolveAll();
  });
  worker.on('failed', (job, error) => rejectAll(new Error(`BullMQ job ${job?.id} failed: ${error.message}`)));
  worker.on('error', (error) => rejectAll(error));
  try {
    await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
    const addAll = async () => {
      for (let added = 0; added < load.jobs; added += load.batch) {
        const count = Math.min(load.batch, load.jobs - added);
        await queue.addBulk(Array.from({ length: count }, () => ({ name: 'noop', data: load.payload })));
      }
    };
    if (timed === 'drain') await addAll();
    await watch.start();
    const running = worker.run();
    if (timed === 'end-to-end') await addAll();
    await allDone;
    await watch.stop();
    await worker.close();
    await running;
    await checkCounts(queue, load.jobs);
  } finally {
    await worker.close(true);
    await queue.close();
  }
}

/** BullMQ's own counts must say: every job completed, nothing else anywhere. */
async function checkCounts(queue: Queue, jobs: number): Promise<void> {
  const counts = await queue.getJobCounts();
  const wrong = Object.entries(counts).filter(([state, count]) => count !== (state === 'completed' ? jobs : 0));
  if (wrong.length > 0) throw new Error(`BullMQ counts after the run: ${JSON.stringify(counts)}; expected ${jobs} completed and nothing else`);
}
