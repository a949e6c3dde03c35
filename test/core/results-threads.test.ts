/**
 * Results and finished() across threads: real worker threads complete jobs
 * (with results, lock-free without, and fail some for good) while the main
 * thread awaits finished() for every job, each registered before any thread
 * starts; and a WorkerPool stores what its handlers return, on every backend.
 */
import { describe, expect, it } from 'vitest';
import { JobFailedError, JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { track } from '../support/pool-harness.js';
import { startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';

const THREADS = 3;
const JOBS = 600;

describe('finished() across threads', () => {
  it('settles every job\'s finished() in the main thread as worker threads complete or kill it, each with its own outcome', { timeout: 60_000 }, async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    const ids = Array.from({ length: JOBS }, (_, n) => queue.submit('t', String(n)));
    // Every wait starts (and sleeps) before any thread exists.
    const outcomes = ids.map((id) => queue.finished(id).then((result) => ({ result }), (error: unknown) => ({ error })));
    const controlBuffer = new SharedArrayBuffer(4);
    const workers: RunningWorker[] = [];
    try {
      for (let index = 0; index < THREADS; index++) {
        workers.push(await startWorker('results-thread.mjs', { handle: queue.share(), index, total: JOBS, controlBuffer }));
      }
      const reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 45_000, 'the worker threads')) as string[][];
      // Each job finished exactly once, by some thread.
      expect(reports.flat().sort()).toEqual([...ids].sort());
      const settled = await withTimeout(Promise.all(outcomes), 10_000, 'every finished()');
      settled.forEach((outcome, n) => {
        const view = queue.view(ids[n]!);
        if (n % 7 === 0) {
          expect(outcome).toEqual({ error: expect.any(JobFailedError) });
          expect((outcome as { error: JobFailedError }).error).toMatchObject({ status: 'DEAD', lastError: `poison ${n}`, jobId: ids[n] });
        } else if (n % 3 === 0) {
          expect(outcome).toEqual({ result: undefined });
        } else {
          // The result names the thread that completed the job, as its view does.
          expect(outcome).toEqual({ result: { n, square: n * n, by: view.workerId } });
          expect(view.result).toEqual({ n, square: n * n, by: view.workerId });
        }
      });
      expect(queue.stats()).toMatchObject({ succeeded: JOBS - Math.ceil(JOBS / 7), dead: Math.ceil(JOBS / 7), pending: 0, running: 0 });
    } finally {
      await terminateAll(workers);
      queue.close();
    }
  });

  it('wakes a finished() already asleep when another thread finishes the job: lock-free, with a result, and dead-lettered', { timeout: 30_000 }, async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
    const { Worker } = await import('node:worker_threads');
    const worker = new Worker(new URL('../fixtures/results-completer.mjs', import.meta.url), { workerData: { handle: queue.share() } });
    const replies: unknown[] = [];
    worker.on('message', (message) => replies.push(message));
    try {
      const steps = [
        { how: 'complete', result: undefined },
        { how: 'complete', result: { from: 'the other thread' } },
        { how: 'fail', result: undefined },
      ] as const;
      for (const [i, step] of steps.entries()) {
        const id = queue.submit('t', String(i));
        const lease = queue.poll('main', 60_000)!;
        const waiting = queue.finished(id).then((result) => ({ result }), (error: unknown) => ({ error }));
        // One turn of the event loop: the wait has looked at the job (RUNNING) and sleeps on the shared word.
        await new Promise((resolve) => setImmediate(resolve));
        worker.postMessage({ jobId: id, token: lease.token, how: step.how, result: step.result });
        const outcome = await withTimeout(waiting, 10_000, `finished(${id}) after the other thread's ${step.how}`);
        if (step.how === 'fail') expect((outcome as { error: JobFailedError }).error).toMatchObject({ code: 'ERR_JOB_FAILED', status: 'DEAD', lastError: 'poison' });
        else expect(outcome).toEqual({ result: step.result });
      }
      await withTimeout(new Promise((resolve) => worker.once('exit', resolve)), 10_000, 'the completer thread');
      expect(replies).toEqual(['done', 'done', 'done']);
    } finally {
      await worker.terminate();
      queue.close();
    }
  });
});

const RESULT_HANDLERS = new URL('../fixtures/result-handlers.mjs', import.meta.url);

describePoolBackends('a WorkerPool stores what its handlers return', (backend) => {
  for (const concurrency of [1, 4]) {
    it(`as each job's result, and fails an attempt whose return value the queue refuses (concurrency ${concurrency})`, { timeout: 60_000 }, async () => {
      const queue = await backend.open(new RetryPolicy(2, 0, 0));
      const squares: string[] = [];
      for (let n = 0; n < 24; n++) squares.push(await queue.submit('square', JSON.stringify({ n })));
      const later = [await queue.submit('later', 'a'), await queue.submit('later', 'b')];
      const nothing = await queue.submit('nothing');
      const refused = await queue.submit('unserializable');
      const pool = track(new WorkerPool(queue, { handlers: RESULT_HANDLERS, threads: 2, concurrency }));
      await pool.start();
      await withTimeout(pool.drain(), 45_000, 'the pool draining');
      for (const [n, id] of squares.entries()) expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', result: { n, square: n * n } });
      expect((await queue.view(later[0]!)).result).toBe('later a');
      expect((await queue.view(later[1]!)).result).toBe('later b');
      expect(await queue.view(nothing)).toMatchObject({ status: 'SUCCEEDED', result: undefined });
      const dead = await queue.view(refused);
      expect([dead.status, dead.attempts, dead.result]).toEqual(['DEAD', 2, undefined]);
      expect(dead.lastError).toMatch(/^the handler's return value was refused as the job's result: Expected `result` to be a JSON-serializable value/);
      await pool.close();
    });
  }
});
