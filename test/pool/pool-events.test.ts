/**
 * What a WorkerPool tells its main thread (`pool.on`), in batches from each
 * thread, and what it logs through a pino-shaped logger. Every claim waits for
 * the events it expects (a bounded wait on a condition), then closes the pool,
 * which flushes every thread's last batch, and checks the whole list: nothing
 * missing, nothing extra.
 */
import { describe, expect, it } from 'vitest';
import {
  JobQueue, RetryPolicy, WorkerPool, systemClock, type JobEvent, type PoolErrorEvent, type PoolEventName, type PoolEvents, type PoolQueue,
} from '../../dist/index.js';
import { bad, expectInvalidSync, waitUntil } from '../support/helpers.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { HANDLERS, scratch, track, trackQueue } from '../support/pool-harness.js';

const JOB_EVENTS = ['completed', 'failed', 'retrying', 'dead', 'stalled', 'refused', 'cancelled'] as const;

/** Every event of `pool`, by name, in the order heard. */
function heard<Q extends PoolQueue>(pool: WorkerPool<Q>): { [E in PoolEventName]: PoolEvents[E][] } {
  const all = { completed: [], failed: [], retrying: [], dead: [], stalled: [], refused: [], cancelled: [], progress: [], error: [] } as { [E in PoolEventName]: PoolEvents[E][] };
  for (const name of JOB_EVENTS) pool.on(name, (event: JobEvent) => all[name].push(event));
  pool.on('error', (event: PoolErrorEvent) => all.error.push(event));
  return all;
}

describePoolBackends('WorkerPool events', (backend) => {
  it('tells completed once per job, and failed + retrying, then failed + dead, for a failing one: jobId, type, attempt, durationMs, error', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(3, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    const events = heard(pool);
    await pool.start();
    const jobs = 60;
    const ids: string[] = [];
    for (let n = 0; n < jobs; n++) ids.push(await queue.submit('noop', s.payload({ n })));
    const slow = await queue.submit('slow', s.payload({ ms: 120 }));
    const failing = await queue.submit('alwaysFails', s.payload());
    await waitUntil('every event came', () => events.completed.length === jobs + 1 && events.dead.length === 1);
    await pool.close();

    expect(events.completed.map((e) => e.jobId).sort()).toEqual([...ids, slow].sort());
    for (const event of events.completed) {
      expect(event).toEqual({ jobId: event.jobId, type: event.jobId === slow ? 'slow' : 'noop', attempt: 1, waitMillis: expect.any(Number), durationMs: expect.any(Number) });
    }
    // The slow handler sleeps 120 ms on a timer, which may fire up to 1 ms early on performance.now()'s
    // finer clock (libuv keeps whole milliseconds): the duration is that sleep, not a no-op's ~0 ms.
    expect(events.completed.find((e) => e.jobId === slow)!.durationMs).toBeGreaterThanOrEqual(119);
    const failure = (attempt: number) => ({ jobId: failing, type: 'alwaysFails', attempt, waitMillis: expect.any(Number), durationMs: expect.any(Number), error: `boom on attempt ${attempt}` });
    // By attempt: each retry runs on either thread, and two threads' batches may arrive in either order.
    const byAttempt = (list: JobEvent[]) => [...list].sort((a, b) => a.attempt - b.attempt);
    expect(byAttempt(events.failed)).toEqual([failure(1), failure(2), failure(3)]);
    expect(byAttempt(events.retrying)).toEqual([failure(1), failure(2)]);
    expect(events.dead).toEqual([failure(3)]);
    expect([events.stalled, events.refused, events.error]).toEqual([[], [], []]);
  });

  it('has told every event of the jobs it drained once drain() resolves: the count read right after is whole, round after round', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(2, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    const events = heard(pool);
    await pool.start();
    // A thread posts its events once per tick (20 ms); a job ends well within one: each round's last events are in the
    // batch not yet posted when the queue is already drained.
    for (let round = 1; round <= 15; round++) {
      for (let n = 0; n < 4; n++) await queue.submit('noop', s.payload({ round, n }));
      await queue.submit('alwaysFails', s.payload({ round }));
      await pool.drain();
      expect({ round, completed: events.completed.length, dead: events.dead.length, failed: events.failed.length })
        .toEqual({ round, completed: 4 * round, dead: round, failed: 2 * round });
    }
    await pool.close();
  });

  it("tells dead after a job's own maxAttempts (submit's option), fewer or more than the policy's", async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(3, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    const events = heard(pool);
    await pool.start();
    const fewer = await queue.submit('alwaysFails', s.payload(), { maxAttempts: 2 });
    const more = await queue.submit('alwaysFails', s.payload(), { maxAttempts: 5 });
    await waitUntil('both jobs dead', () => events.dead.length === 2);
    await pool.close();

    // Sorted: a retry runs on either thread, and two threads' batches may reach this thread in either order.
    const attemptsOf = (list: JobEvent[], id: string) => list.filter((e) => e.jobId === id).map((e) => e.attempt).sort((a, b) => a - b);
    expect([attemptsOf(events.failed, fewer), attemptsOf(events.retrying, fewer), attemptsOf(events.dead, fewer)]).toEqual([[1, 2], [1], [2]]);
    expect([attemptsOf(events.failed, more), attemptsOf(events.retrying, more), attemptsOf(events.dead, more)]).toEqual([[1, 2, 3, 4, 5], [1, 2, 3, 4], [5]]);
    expect((await queue.view(more)).status).toBe('DEAD');
  });
});

describe('WorkerPool events of threads that die or lose their lease', { timeout: 30_000 }, () => {
  it('tells error, then stalled, failed and retrying, when a thread dies mid-job; then completed on the retry', async () => {
    const s = scratch();
    const queue = memoryQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000 }));
    const events = heard(pool);
    await pool.start();
    const id = queue.submit('crashByExit', s.payload());
    await waitUntil('the retry completed', () => events.completed.length === 1);
    await pool.close();
    const lost = { jobId: id, type: 'crashByExit', attempt: 1, waitMillis: expect.any(Number), durationMs: expect.any(Number), error: 'the worker thread died while running the job' };
    expect(events.error).toEqual([{ thread: 0, error: expect.stringMatching(/^the worker thread died while running the job: /) }]);
    expect(events.stalled).toEqual([lost]);
    expect(events.failed).toEqual([lost]);
    expect(events.retrying).toEqual([lost]);
    expect(events.completed).toEqual([{ jobId: id, type: 'crashByExit', attempt: 2, waitMillis: expect.any(Number), durationMs: expect.any(Number) }]);
    expect(events.dead).toEqual([]);
  });

  it('tells refused for the late complete of a thread that blocked past its lease (a zombie)', async () => {
    const s = scratch();
    const queue = memoryQueue();
    const leaseMillis = 1_000;
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis }));
    const events = heard(pool);
    await pool.start();
    const id = queue.submit('block', s.payload({ blockMillis: leaseMillis + 300 }));
    await waitUntil('the zombie was refused and the retry completed', () => events.refused.length === 1 && events.completed.length === 1);
    await pool.close();
    expect(events.refused).toEqual([{ jobId: id, type: 'block', attempt: 1, waitMillis: expect.any(Number), durationMs: expect.any(Number), error: expect.stringContaining('not the current lease') }]);
    expect(events.completed).toEqual([expect.objectContaining({ jobId: id, attempt: 2 })]);
    expect(events.error).toEqual([]);
  });
});

describe('WorkerPool#on and #off', { timeout: 30_000 }, () => {
  it('stops telling a listener once it is removed with off()', async () => {
    const s = scratch();
    const queue = memoryQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000 }));
    const first: string[] = [];
    const listener = (event: JobEvent) => first.push(event.jobId);
    pool.on('completed', listener);
    await pool.start();
    const a = queue.submit('noop', s.payload());
    await waitUntil('the first job was told', () => first.length === 1);
    pool.off('completed', listener);
    const later: string[] = [];
    pool.on('completed', (event) => later.push(event.jobId));
    const b = queue.submit('noop', s.payload());
    // One thread tells its events in order: once `b` reached the new listener, the removed one heard all it ever will.
    await waitUntil('the second job was told', () => later.includes(b));
    expect(first).toEqual([a]);
  });

  it('refuses an unknown event name and a listener that is not a function', async () => {
    const queue = memoryQueue();
    const pool = new WorkerPool(queue, { handlers: HANDLERS, threads: 1 });
    expectInvalidSync(() => pool.on(bad('complete'), () => undefined));
    expectInvalidSync(() => pool.on('completed', bad(null)));
  });
});

describe('WorkerPool logger', { timeout: 30_000 }, () => {
  it("logs retries as warnings, dead letters as errors and thread restarts as warnings, in pino's (fields, message) shape", async () => {
    const s = scratch();
    const queue = memoryQueue(2);
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const at = (level: string) => (fields: object, message?: string) => lines.push({ level, fields: fields as Record<string, unknown>, message: message ?? '' });
    const logger = { info: at('info'), warn: at('warn'), error: at('error') };
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000, logger }));
    await pool.start();
    const failing = queue.submit('alwaysFails', s.payload());
    await waitUntil('the dead letter was logged', () => lines.some((l) => l.message === 'job dead-lettered'));
    const crashing = queue.submit('crashByExit', s.payload());
    await waitUntil('the restart was logged', () => lines.some((l) => l.message === 'pool thread replaced'));
    await waitUntil('the crashed job was retried', () => queue.view(crashing).status === 'SUCCEEDED');
    await pool.close();

    expect(lines.filter((l) => l.fields['jobId'] === failing)).toEqual([
      { level: 'warn', message: 'job failed; it will be retried', fields: expect.objectContaining({ jobId: failing, type: 'alwaysFails', attempt: 1, error: 'boom on attempt 1' }) },
      { level: 'error', message: 'job dead-lettered', fields: expect.objectContaining({ jobId: failing, attempt: 2, error: 'boom on attempt 2' }) },
    ]);
    expect(lines.filter((l) => l.message === 'pool thread replaced')).toEqual([
      { level: 'warn', message: 'pool thread replaced', fields: { thread: 0, error: expect.stringContaining('died') } },
    ]);
    expect(lines.filter((l) => l.fields['jobId'] === crashing).map((l) => [l.level, l.message])).toEqual([
      ['warn', 'job lost its lease'],
      ['warn', 'job failed; it will be retried'],
    ]);
  });
});

/** A queue in shared memory on systemClock, closed after the test. */
function memoryQueue(maxAttempts = 3): JobQueue {
  return trackQueue(new JobQueue(systemClock, new RetryPolicy(maxAttempts, 0, 0)));
}
