import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { T0, bad, expectInvalid, mustPoll, setup, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

/** Submits `count` jobs and completes each: their ids, oldest finished first. */
async function finishJobs(queue: ContractQueue, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = await queue.submit('t', `p${i}`);
    const lease = await mustPoll(queue, id);
    await queue.complete(lease.jobId, lease.token);
    ids.push(id);
  }
  return ids;
}

/** Each job's status, or the code of the error view rejects with; one call at a time. */
async function statusesOf(queue: ContractQueue, ids: readonly string[]): Promise<string[]> {
  const statuses: string[] = [];
  for (const id of ids) statuses.push(await statusOf(queue, id));
  return statuses;
}

async function statusOf(queue: ContractQueue, id: string): Promise<string> {
  try {
    return (await queue.view(id)).status;
  } catch (error) {
    return (error as { code?: string }).code ?? 'error';
  }
}

describeEachBackend('retention of finished jobs', (backend) => {
  it('keeps at most maxFinished finished jobs, evicting the oldest finished first, without room being needed', async () => {
    const { queue } = await setup(backend, { options: { retain: { maxFinished: 3 } } });
    const ids = await finishJobs(queue, 5);
    const cancelled = await queue.submit('t', 'to cancel');
    await queue.cancel(cancelled);
    // Any call brings retention up to date (a lock-free complete is counted by the next locked call).
    const stats = await queue.stats();
    expect([stats.succeeded, stats.cancelled]).toEqual([2, 1]);
    expect(await statusesOf(queue, ids)).toEqual(['ERR_JOB_NOT_FOUND', 'ERR_JOB_NOT_FOUND', 'ERR_JOB_NOT_FOUND', 'SUCCEEDED', 'SUCCEEDED']);
    expect(await statusOf(queue, cancelled)).toBe('CANCELLED');
    expect((await queue.jobs()).jobs.map((job) => job.id)).toEqual([ids[3], ids[4], cancelled]);
  });

  it('evicts finished jobs once maxAgeMillis have passed since they finished, and keeps DEAD, PENDING and RUNNING jobs', async () => {
    const { queue, clock } = await setup(backend, { options: { retain: { maxAgeMillis: 1_000 } } });
    const [early] = await finishJobs(queue, 1);
    clock.advance(600);
    const [later] = await finishJobs(queue, 1);
    const deadId = await queue.submit('t', 'poison');
    const dead = await mustPoll(queue, deadId, 60_000);
    await queue.fail(dead.jobId, dead.token, 'x', { permanent: true });
    const runningId = await queue.submit('t', 'long');
    await mustPoll(queue, runningId, 60_000);
    const pendingId = await queue.submit('t', 'waits');
    clock.advance(399);
    expect([await statusOf(queue, early!), await statusOf(queue, later!)]).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    clock.advance(1);
    expect((await queue.stats()).succeeded).toBe(1);
    expect([await statusOf(queue, early!), await statusOf(queue, later!)]).toEqual(['ERR_JOB_NOT_FOUND', 'SUCCEEDED']);
    clock.advance(600);
    expect((await queue.stats()).succeeded).toBe(0);
    expect(await statusesOf(queue, [deadId, runningId, pendingId])).toEqual(['DEAD', 'RUNNING', 'PENDING']);
  });

  it('keeps every finished job with maxFinished 0 … none: 0 keeps none', async () => {
    const { queue } = await setup(backend, { options: { retain: { maxFinished: 0 } } });
    const ids = await finishJobs(queue, 2);
    expect((await queue.stats()).succeeded).toBe(0);
    expect(await statusesOf(queue, ids)).toEqual(['ERR_JOB_NOT_FOUND', 'ERR_JOB_NOT_FOUND']);
  });

  it('refuses a bad retain option with InvalidArgumentError', async () => {
    for (const retain of [null, 5, { maxFinished: -1 }, { maxFinished: 1.5 }, { maxAgeMillis: -1 }, { maxAgeMillis: Infinity }, { keep: 3 }]) {
      await expectInvalid(() => setup(backend, { options: { retain: bad(retain) } }));
    }
  });
});

/** Fails each of `count` new jobs permanently, one clock step apart: their ids, oldest dead first. */
async function killJobs(queue: ContractQueue, clock: ManualClock, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = await queue.submit('t', `d${i}`);
    const lease = await mustPoll(queue, id, 60_000);
    await queue.fail(lease.jobId, lease.token, `poison ${i}`, { permanent: true });
    ids.push(id);
    clock.advance(10);
  }
  return ids;
}

describeEachBackend('retention of DEAD jobs', (backend) => {
  it('keeps at most maxDead DEAD jobs, evicting the oldest dead first; retryDead works on those kept', async () => {
    const { queue, clock } = await setup(backend, { options: { retain: { maxDead: 2 } } });
    // Submitted in one order, dead in another: J2 dies first.
    const first = await queue.submit('t', 'dies last', 0);
    const second = await queue.submit('t', 'dies first', 9);
    const third = await queue.submit('t', 'dies second', 5);
    for (const id of [second, third, first]) {
      const lease = await mustPoll(queue, id, 60_000);
      await queue.fail(id, lease.token, 'poison', { permanent: true });
      clock.advance(10);
    }
    expect((await queue.deadLetters()).map((job) => job.id)).toEqual([first, third]);
    expect(await statusOf(queue, second)).toBe('ERR_JOB_NOT_FOUND');
    expect(await queue.dlqDepth()).toBe(2);
    await queue.retryDead(third);
    expect((await mustPoll(queue, third)).jobId).toBe(third);
    expect((await queue.deadLetters()).map((job) => job.id)).toEqual([first]);
  });

  it('evicts DEAD jobs once dead maxDeadAgeMillis, and keeps the younger ones and every other status', async () => {
    const { queue, clock } = await setup(backend, { options: { retain: { maxDeadAgeMillis: 1_000 } } });
    const [early] = await killJobs(queue, clock, 1);
    clock.advance(590);
    const [later] = await killJobs(queue, clock, 1);
    const done = (await finishJobs(queue, 1))[0]!;
    const pendingId = await queue.submit('t', 'waits');
    clock.advance(389);
    expect((await queue.deadLetters()).map((job) => job.id)).toEqual([early, later]);
    clock.advance(1);
    expect((await queue.deadLetters()).map((job) => job.id)).toEqual([later]);
    expect(await statusOf(queue, early!)).toBe('ERR_JOB_NOT_FOUND');
    clock.advance(600);
    expect(await queue.deadLetters()).toEqual([]);
    expect(await queue.stats()).toMatchObject({ dead: 0, succeeded: 1, pending: 1 });
    expect([await statusOf(queue, done), await statusOf(queue, pendingId)]).toEqual(['SUCCEEDED', 'PENDING']);
  });

  it('keeps every DEAD job without the option, and never evicts one for room', async () => {
    const { queue, clock } = await setup(backend, { options: { capacity: 4, retain: { maxFinished: 0, maxAgeMillis: 1 } } });
    const ids = await killJobs(queue, clock, 4);
    clock.advance(1_000_000);
    expect((await queue.deadLetters()).map((job) => job.id)).toEqual(ids);
  });

  it('refuses a bad DEAD limit with InvalidArgumentError', async () => {
    for (const retain of [{ maxDead: -1 }, { maxDead: 1.5 }, { maxDead: '3' }, { maxDeadAgeMillis: -1 }, { maxDeadAgeMillis: Infinity }, { maxDeadAgeMillis: NaN }]) {
      await expectInvalid(() => setup(backend, { options: { retain: bad(retain) } }));
    }
  });
});

describe('retention of a journaled queue', () => {
  it('deletes the journal rows of the jobs it evicts: a reopened queue does not have them', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const policy = new RetryPolicy(3, 0, 0);
    const queue = openJournal(path, clock, policy, { retain: { maxFinished: 1 } });
    const ids = queue.submitMany([{ type: 't' }, { type: 't' }, { type: 't' }]);
    for (const id of ids) {
      const lease = queue.poll('w', 60_000)!;
      expect(lease.jobId).toBe(id);
      queue.complete(lease.jobId, lease.token);
    }
    expect(queue.stats().succeeded).toBe(1);
    closeJournal(queue);
    // Reopened without the option: nothing is evicted for it, so what is there is what the journal kept.
    const reopened = openJournal(path, clock, policy);
    expect(reopened.jobs().jobs.map((job) => job.id)).toEqual([ids[2]]);
  });

  it('ages DEAD jobs from when they died, across a reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const policy = new RetryPolicy(1, 0, 0);
    const retain = { maxDeadAgeMillis: 1_000 };
    const queue = openJournal(path, clock, policy, { retain });
    const id = queue.submit('t', 'poison');
    const lease = queue.poll('w', 60_000)!;
    queue.fail(id, lease.token, 'boom');
    closeJournal(queue);
    clock.advance(999);
    const reopened = openJournal(path, clock, policy, { retain });
    expect(reopened.deadLetters().map((job) => job.id)).toEqual([id]);
    clock.advance(1);
    expect(reopened.deadLetters()).toEqual([]);
    closeJournal(reopened);
  });
});

describe('retention across threads', () => {
  it('counts the jobs other threads completed lock-free: the next locked call keeps maxFinished of them and evicts the rest', async () => {
    const WORKERS = 2;
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0), { capacity: 4_096, retain: { maxFinished: 10 } });
    const ids = queue.submitMany(Array.from({ length: 3_000 }, () => ({ type: 't' })));
    const controlBuffer = new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT);
    const threads: RunningWorker[] = [];
    try {
      for (let index = 0; index < WORKERS; index++) {
        threads.push(await startWorker('listing-thread.mjs', { handle: queue.share(), role: 'worker', index, parties: WORKERS, workers: WORKERS, controlBuffer }));
      }
      const reports = (await withTimeout(Promise.all(threads.map((t) => t.result)), 60_000, 'the completing threads')) as { completed: string[] }[];
      expect(reports.flatMap((r) => r.completed).sort()).toEqual([...ids].sort());
    } finally {
      await terminateAll(threads);
    }
    try {
      expect(queue.stats().succeeded).toBe(10);
      const kept = queue.jobs({ status: 'SUCCEEDED' }).jobs.map((job) => job.id);
      expect(kept).toHaveLength(10);
      // Every other job was evicted: gone from view too.
      const gone = ids.filter((id) => !kept.includes(id));
      expect(gone.filter((id) => { try { queue.view(id); return true; } catch { return false; } })).toEqual([]);
    } finally {
      queue.close();
    }
  });
});
