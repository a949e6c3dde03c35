/**
 * Progress across threads: one thread extends its lease lock-free while
 * another reports the job's progress under that lease, each move racing the
 * other's CAS on the slot's word. Neither is refused, the last report is the
 * one kept, and the job completes on its one attempt.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';

const ROUNDS = 20_000;

describe('progress across threads', () => {
  it('keeps every report and every extend of one lease made at once from two threads', { timeout: 60_000 }, async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    const id = queue.submit('t', 'p');
    const controlBuffer = new SharedArrayBuffer(8);
    const workers: RunningWorker[] = [];
    try {
      workers.push(await startWorker('progress-racer.mjs', { handle: queue.share(), role: 'reporter', rounds: ROUNDS, controlBuffer }));
      workers.push(await startWorker('progress-racer.mjs', { handle: queue.share(), role: 'holder', rounds: ROUNDS, controlBuffer }));
      const [reporter, holder] = (await withTimeout(Promise.all(workers.map((w) => w.result)), 45_000, 'the racing threads')) as { errors: string[]; extended?: number }[];
      expect(reporter!.errors).toEqual([]);
      expect(holder!.errors).toEqual([]);
      expect(holder!.extended).toBeGreaterThanOrEqual(ROUNDS);
      expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, progress: ROUNDS });
    } finally {
      await terminateAll(workers);
      queue.close();
    }
  });
});
