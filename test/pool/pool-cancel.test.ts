/**
 * cancel(jobId) of a job a WorkerPool thread is running: the handler's
 * ctx.signal aborts (on another thread than the cancel's), the job ends
 * CANCELLED, and what the handler returns afterwards is refused, on every
 * backend. Waits are handshakes (log lines, files, events), each with a
 * give-up only so a broken run ends.
 */
import { expect, it } from 'vitest';
import { IllegalStateError, RetryPolicy, WorkerPool, type JobEvent, type PoolQueue } from '../../dist/index.js';
import { waitUntil } from '../support/helpers.js';
import { describePoolBackends, type PoolBackend, type PoolTestQueue } from '../support/pool-backends.js';
import { scratch, track } from '../support/pool-harness.js';

const CANCEL_HANDLERS = new URL('../fixtures/cancel-handlers.mjs', import.meta.url);

interface Heard {
  completed: JobEvent[];
  cancelled: JobEvent[];
  refused: JobEvent[];
  stalled: JobEvent[];
  failed: JobEvent[];
}

function listen<Q extends PoolQueue>(pool: WorkerPool<Q>): Heard {
  const heard: Heard = { completed: [], cancelled: [], refused: [], stalled: [], failed: [] };
  for (const name of ['completed', 'cancelled', 'refused', 'stalled', 'failed'] as const) pool.on(name, (event: JobEvent) => heard[name].push(event));
  return heard;
}

async function startCancelPool(backend: PoolBackend, options: { threads: number; concurrency?: number }) {
  const s = scratch();
  const queue = await backend.open(new RetryPolicy(3, 0, 0));
  const pool = track(new WorkerPool(queue, { handlers: CANCEL_HANDLERS, leaseMillis: 30_000, ...options }));
  const heard = listen(pool);
  await pool.start();
  return { s, queue, pool, heard };
}

/** The pool's stats, whichever backend (a Promise on Redis). */
async function poolStats(pool: WorkerPool<PoolTestQueue>) {
  return await pool.stats();
}

describePoolBackends('cancel of a running job', (backend) => {
  it("aborts the handler's signal with JobCancelledError, ends the job CANCELLED and refuses its late result", async () => {
    const { s, queue, pool, heard } = await startCancelPool(backend, { threads: 2 });
    const id = await queue.submit('untilCancelled', s.payload());
    await waitUntil('the handler started', () => s.events('start', id).length === 1);
    await queue.cancel(id);
    await waitUntil('the cancelled event', () => heard.cancelled.length === 1, 20_000);
    const [aborted] = s.events('aborted', id);
    expect(aborted?.['reason']).toMatchObject({ name: 'JobCancelledError', code: 'ERR_JOB_CANCELLED', jobId: id });
    expect(s.events('never-aborted')).toEqual([]);
    // The handler ran on a pool thread, not the thread that cancelled.
    expect(aborted!.threadId).not.toBe(0);
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1, lastError: null });
    expect((await queue.view(id)).result ?? null).toBeNull();
    expect(heard.cancelled[0]).toMatchObject({ jobId: id, type: 'untilCancelled', attempt: 1 });
    expect([heard.completed, heard.refused, heard.stalled, heard.failed]).toEqual([[], [], [], []]);
    expect(await poolStats(pool)).toMatchObject({ refused: 0, restarts: 0, succeeded: 0, cancelled: 1, running: 0 });
  });

  it('refuses the result of a handler that ignores its signal: the job stays CANCELLED, not a success, not a zombie, the thread not hung', async () => {
    const { s, queue, pool, heard } = await startCancelPool(backend, { threads: 1 });
    const id = await queue.submit('ignoresCancel', s.payload());
    await waitUntil('the handler started', () => s.events('start', id).length === 1);
    await queue.cancel(id);
    s.signal('go');
    await waitUntil('the cancelled event', () => heard.cancelled.length === 1, 20_000);
    expect(s.events('finish', id)).toHaveLength(1);
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1 });
    expect([heard.completed, heard.refused, heard.stalled, heard.failed]).toEqual([[], [], [], []]);
    // The thread goes on: the next job runs on it and succeeds.
    const next = await queue.submit('raceCancel', s.payload({ go: 'go', n: 1 }));
    await waitUntil('the next job completed', () => heard.completed.length === 1, 20_000);
    expect(heard.completed[0]!.jobId).toBe(next);
    expect(await poolStats(pool)).toMatchObject({ refused: 0, restarts: 0, succeeded: 1, cancelled: 1 });
  });

  it('settles a race of cancel with complete on real threads: exactly one wins, for every job, and the status and events match it', async () => {
    const { s, queue, pool, heard } = await startCancelPool(backend, { threads: 2, concurrency: 4 });
    const rounds = 4;
    const perRound = 8;
    const outcomes = new Map<string, 'cancelled' | 'refused'>();
    for (let round = 0; round < rounds; round++) {
      const go = `go-${round}`;
      const ids: string[] = [];
      for (let n = 0; n < perRound; n++) ids.push(await queue.submit('raceCancel', s.payload({ go, n })));
      await waitUntil(`round ${round}: every job started`, () => ids.every((id) => s.events('start', id).length === 1), 20_000);
      // The handlers return as they see the file; the cancels go out at once, racing their completes.
      s.signal(go);
      await Promise.all(ids.map(async (id) => {
        try {
          await queue.cancel(id);
          outcomes.set(id, 'cancelled');
        } catch (error) {
          expect(error).toBeInstanceOf(IllegalStateError);
          expect((error as IllegalStateError).code).toBe('ERR_ILLEGAL_STATE');
          outcomes.set(id, 'refused');
        }
      }));
      const seen = (round + 1) * perRound;
      await waitUntil(`round ${round}: an event for every job`, () => heard.completed.length + heard.cancelled.length === seen, 20_000);
    }
    const completed = new Set(heard.completed.map((event) => event.jobId));
    const cancelled = new Set(heard.cancelled.map((event) => event.jobId));
    for (const [id, outcome] of outcomes) {
      const view = await queue.view(id);
      if (outcome === 'cancelled') {
        // The cancel won: the handler's complete was refused.
        expect({ id, status: view.status, completed: completed.has(id), cancelled: cancelled.has(id) }).toEqual({ id, status: 'CANCELLED', completed: false, cancelled: true });
      } else {
        // The complete won: the cancel found the job SUCCEEDED.
        expect({ id, status: view.status, completed: completed.has(id), cancelled: cancelled.has(id) }).toEqual({ id, status: 'SUCCEEDED', completed: true, cancelled: false });
        expect(view.result).toEqual({ n: expect.any(Number) });
      }
    }
    expect(outcomes.size).toBe(rounds * perRound);
    expect([heard.refused, heard.stalled, heard.failed]).toEqual([[], [], []]);
    const stats = await poolStats(pool);
    const won = [...outcomes.values()].filter((outcome) => outcome === 'cancelled').length;
    expect(stats).toMatchObject({ refused: 0, restarts: 0, cancelled: won, succeeded: rounds * perRound - won, running: 0, pending: 0 });
  });
});
