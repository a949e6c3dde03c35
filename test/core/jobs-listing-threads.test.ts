import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';

interface WorkerReport {
  completed: string[];
}
interface ListerReport {
  walks: string[][];
  /** Per SUCCEEDED walk: jobs SUCCEEDED before it began, less those it listed. */
  shortfalls: number[];
  final: Record<string, string[]>;
}

const JOBS = 2_000;
const WORKERS = 2;

/** Every page of `status` through `next`, in this thread. */
function walk(queue: JobQueue, status: 'PENDING' | 'SUCCEEDED'): string[] {
  const ids: string[] = [];
  for (let after: string | undefined; ;) {
    const page = queue.jobs({ status, limit: 100, ...(after === undefined ? {} : { after }) });
    ids.push(...page.jobs.map((job) => job.id));
    if (page.next === null) return ids;
    after = page.next;
  }
}

describe('jobs() across threads', () => {
  it('a thread lists what the main thread submitted and other threads completed lock-free, each walk in order and without repeats', async () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0), { capacity: 4_096 });
    const ids = queue.submitMany(Array.from({ length: JOBS }, (_, i) => ({ type: 't', payload: `job ${i}` })));
    const controlBuffer = new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT);
    const threads: RunningWorker[] = [];
    try {
      // The lister makes the first jobs() call of the queue: it builds the index from the main thread's jobs.
      const common = { handle: queue.share(), parties: WORKERS + 1, workers: WORKERS, controlBuffer };
      threads.push(await startWorker('listing-thread.mjs', { ...common, role: 'lister', index: 0 }));
      for (let index = 1; index <= WORKERS; index++) threads.push(await startWorker('listing-thread.mjs', { ...common, role: 'worker', index }));
      const [lister, ...workers] = (await withTimeout(Promise.all(threads.map((t) => t.result)), 60_000, 'the listing threads')) as [
        ListerReport, ...WorkerReport[],
      ];
      // Every job completed once, by some worker.
      expect(workers.flatMap((w) => w.completed).sort()).toEqual([...ids].sort());
      const number = (id: string) => Number(id.slice(1));
      // The workers waited for a first walk pair midway: at least one walk met jobs that moved.
      expect(lister.walks.length).toBeGreaterThanOrEqual(2);
      expect(lister.walks[0]!.length + lister.walks[1]!.length).toBeGreaterThan(0);
      for (const listed of lister.walks) {
        // In submission order, so no job twice: a job moved mid-walk is listed once or not at all.
        expect(listed.every((id, i) => i === 0 || number(listed[i - 1]!) < number(id))).toBe(true);
        expect(listed.every((id) => ids.includes(id))).toBe(true);
      }
      expect(Math.max(...lister.shortfalls)).toBeLessThanOrEqual(0);
      // Once the workers are done: the thread and this one list the same, and it is the truth.
      expect(lister.final).toEqual({ PENDING: [], RUNNING: [], SUCCEEDED: ids, DEAD: [], CANCELLED: [] });
      expect(walk(queue, 'SUCCEEDED')).toEqual(ids);
      expect(walk(queue, 'PENDING')).toEqual([]);
    } finally {
      await terminateAll(threads);
      queue.close();
    }
  });
});
