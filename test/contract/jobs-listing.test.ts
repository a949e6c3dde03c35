import { describe, expect, it, onTestFinished } from 'vitest';
import { JobQueue, ManualClock, PartitionedRedisQueue, RetryPolicy, type JobPage, type JobQuery, type JobStatus, type JobView } from '../../dist/index.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { T0, bad, expectInvalid, mustPoll, setup } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

/** Every page of `query` from the start, walked through `next`: the ids of each page. */
async function walk(queue: Pick<ContractQueue, 'jobs'>, query: JobQuery = {}): Promise<string[][]> {
  const pages: string[][] = [];
  for (let after: string | undefined; ;) {
    const page: JobPage = await queue.jobs({ ...query, ...(after === undefined ? {} : { after }) });
    pages.push(page.jobs.map((job) => job.id));
    if (page.next === null) return pages;
    after = page.next;
  }
}

/** Ids in ascending job-number order. */
function ascending(ids: readonly string[]): string[] {
  return [...ids].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
}

/**
 * A queue holding jobs of every status, with known ids: PENDING (ready and
 * delayed), RUNNING, SUCCEEDED, DEAD, CANCELLED, of types 'a' and 'b'.
 */
async function everyStatus(queue: ContractQueue): Promise<Record<JobStatus, string[]>> {
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push(await queue.submit(i % 2 === 0 ? 'a' : 'b', `p${i}`));
  const delayed = await queue.submit('a', 'later', { delayMillis: 60_000 });
  // J1..J3 SUCCEEDED, J4 DEAD, J5 RUNNING, J6 CANCELLED, J7..J12 and the delayed one PENDING.
  for (const id of ids.slice(0, 5)) {
    const lease = await mustPoll(queue, id);
    if (id === ids[3]) await queue.fail(lease.jobId, lease.token, 'poison', { permanent: true });
    else if (id !== ids[4]) await queue.complete(lease.jobId, lease.token);
  }
  await queue.cancel(ids[5]!);
  return {
    SUCCEEDED: ids.slice(0, 3), DEAD: [ids[3]!], RUNNING: [ids[4]!], CANCELLED: [ids[5]!], PENDING: [...ids.slice(6), delayed],
  };
}

describeEachBackend('jobs: listing', (backend) => {
  it('lists every job of each status, and only those, in submission order', async () => {
    const { queue } = await setup(backend);
    const expected = await everyStatus(queue);
    for (const [status, ids] of Object.entries(expected)) {
      const page = await queue.jobs({ status: status as JobStatus });
      expect(page.jobs.map((job) => job.id)).toEqual(ids);
      expect(page.jobs.every((job) => job.status === status)).toBe(true);
      expect(page.next).toBeNull();
    }
  });

  it('lists every job, of any status, in submission order when no status is asked', async () => {
    const { queue } = await setup(backend);
    const expected = await everyStatus(queue);
    const page = await queue.jobs();
    expect(page.jobs.map((job) => job.id)).toEqual(ascending(Object.values(expected).flat()));
    expect(page.next).toBeNull();
    // Each listed job is what view shows.
    for (const job of page.jobs) expect(job).toEqual(await queue.view(job.id));
  });

  it('filters by type, with or without a status', async () => {
    const { queue } = await setup(backend);
    const expected = await everyStatus(queue);
    const typed = async (query: JobQuery) => (await walk(queue, query)).flat();
    const all = await queue.jobs();
    const ofB = all.jobs.filter((job) => job.type === 'b').map((job) => job.id);
    expect(ofB.length).toBeGreaterThan(0);
    expect(await typed({ type: 'b' })).toEqual(ofB);
    expect(await typed({ type: 'a', status: 'PENDING' })).toEqual(expected.PENDING.filter((id) => all.jobs.find((job) => job.id === id)!.type === 'a'));
    expect(await typed({ type: 'none-of-these' })).toEqual([]);
  });

  it('looks at no more than 1000 jobs a call for a type: a page may come back short, with a next, until the walk ends', async () => {
    const { queue } = await setup(backend);
    await queue.submitMany(Array.from({ length: 1_500 }, () => ({ type: 'common' })));
    const rare = await queue.submit('rare');
    const first = await queue.jobs({ type: 'rare' });
    expect(first.jobs).toEqual([]);
    expect(first.next).not.toBeNull();
    expect(await walk(queue, { type: 'rare' })).toEqual([[], [rare]]);
    expect((await queue.jobs({ type: 'common', limit: 3 })).jobs.map((job) => job.id)).toEqual(['J1', 'J2', 'J3']);
  });

  it('pages cover every job exactly once when nothing moves, each page at most `limit` long', async () => {
    const { queue } = await setup(backend);
    const expected = await everyStatus(queue);
    for (const limit of [1, 2, 5, 13, 100]) {
      const pages = await walk(queue, { limit });
      expect(pages.every((page) => page.length <= limit)).toBe(true);
      expect(pages.slice(0, -1).every((page) => page.length === limit)).toBe(true);
      expect(pages.flat()).toEqual(ascending(Object.values(expected).flat()));
      const pending = await walk(queue, { status: 'PENDING', limit });
      expect(pending.flat()).toEqual(expected.PENDING);
    }
  });

  it('keeps a cursor valid while jobs move: a job is listed where the call that meets it finds it, none twice', async () => {
    const { queue } = await setup(backend);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await queue.submit('t', `p${i}`));
    const first = await queue.jobs({ status: 'PENDING', limit: 2 });
    expect(first.jobs.map((job) => job.id)).toEqual(ids.slice(0, 2));
    // J1 (already listed) and J4 (not yet) leave PENDING; J3 is the job the next page starts at.
    const one = await mustPoll(queue, ids[0]);
    await queue.complete(one.jobId, one.token);
    await queue.cancel(ids[3]!);
    const second = await queue.jobs({ status: 'PENDING', limit: 2, after: first.next! });
    expect(second.jobs.map((job) => job.id)).toEqual([ids[2], ids[4]]);
    const rest = await queue.jobs({ status: 'PENDING', limit: 2, after: second.next! });
    expect(rest.jobs.map((job) => job.id)).toEqual([ids[5]]);
    expect(rest.next).toBeNull();
    // The cursor of one status goes on in another: the moved jobs are where they are now.
    const cancelled = await queue.jobs({ status: 'CANCELLED', after: first.next! });
    expect(cancelled.jobs.map((job) => job.id)).toEqual([ids[3]]);
    expect((await queue.jobs({ status: 'SUCCEEDED' })).jobs.map((job) => job.id)).toEqual([ids[0]]);
  });

  it('lists jobs a failed attempt, a release, an expiry and a retry moved', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const ids = [await queue.submit('t', 'a'), await queue.submit('t', 'b'), await queue.submit('t', 'c')];
    const a = await mustPoll(queue, ids[0], 1_000);
    const b = await mustPoll(queue, ids[1], 5_000);
    const c = await mustPoll(queue, ids[2], 5_000);
    await queue.fail(b.jobId, b.token, 'boom');
    await queue.release(c.jobId, c.token);
    clock.advance(2_000);
    const dead = (await queue.jobs({ status: 'DEAD' })).jobs.map((job) => job.id);
    expect(dead).toEqual([a.jobId, b.jobId]);
    expect((await queue.jobs({ status: 'PENDING' })).jobs.map((job) => job.id)).toEqual([c.jobId]);
    await queue.retryDead(a.jobId);
    expect((await queue.jobs({ status: 'PENDING' })).jobs.map((job) => job.id)).toEqual([a.jobId, c.jobId]);
    expect((await queue.jobs({ status: 'DEAD' })).jobs.map((job) => job.id)).toEqual([b.jobId]);
    expect((await queue.jobs({ status: 'RUNNING' })).jobs).toEqual([]);
  });

  it('leaves evicted jobs out', async () => {
    const { queue } = await setup(backend, { options: { capacity: 3 } });
    const ids = [await queue.submit('t', 'a'), await queue.submit('t', 'b')];
    for (const id of ids) {
      const lease = await mustPoll(queue, id);
      await queue.complete(lease.jobId, lease.token);
    }
    expect((await queue.jobs({ status: 'SUCCEEDED' })).jobs.map((job) => job.id)).toEqual(ids);
    // Room for two more evicts the oldest finished job.
    const more = [await queue.submit('t', 'c'), await queue.submit('t', 'd')];
    expect((await queue.jobs({ status: 'SUCCEEDED' })).jobs.map((job) => job.id)).toEqual([ids[1]]);
    expect((await queue.jobs()).jobs.map((job) => job.id)).toEqual([ids[1], ...more]);
  });

  it('refuses bad queries with InvalidArgumentError, and changes nothing', async () => {
    const { queue } = await setup(backend);
    const expected = await everyStatus(queue);
    const before = await queue.stats();
    const page = await queue.jobs({ limit: 2 });
    for (const query of [
      { limit: 0 }, { limit: 1001 }, { limit: 1.5 }, { limit: bad('5') }, { status: bad('DONE') }, { status: bad('pending') },
      { type: bad(5) }, { type: '' }, { after: 'not a cursor' }, { after: bad(3) }, { after: page.next!.slice(1) }, { page: 2 } as JobQuery,
    ]) {
      await expectInvalid(() => queue.jobs(query));
    }
    await expectInvalid(() => queue.jobs(bad('PENDING')));
    expect((await expectInvalid(() => queue.jobs(bad([])))).message).toContain('`query` to be an object, got an array');
    expect(await queue.stats()).toEqual(before);
    expect((await walk(queue)).flat()).toEqual(ascending(Object.values(expected).flat()));
  });
});

describeRedis('jobs: listing a PartitionedRedisQueue', () => {
  it('merges the partitions in job-number order: every status, a type, any page size, each job once', async () => {
    const server = await fileRedis();
    const queue = await PartitionedRedisQueue.connect({
      redis: server.url, name: `listing-${process.pid}`, partitions: 3, policy: new RetryPolicy(3, 0, 0), time: new ManualClock(T0),
    });
    onTestFinished(() => queue.close());
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await queue.submit(i % 3 === 0 ? 'a' : 'b', `p${i}`));
    // Some of each status, spread over the partitions: complete, dead-letter or keep every lease by turns.
    for (let i = 0; i < 9; i++) {
      const lease = (await queue.poll('w1', 60_000))!;
      if (i % 3 === 0) await queue.complete(lease.jobId, lease.token);
      if (i % 3 === 1) await queue.fail(lease.jobId, lease.token, 'poison', { permanent: true });
    }
    const pending = [];
    for (const id of ids) if ((await queue.view(id)).status === 'PENDING') pending.push(id);
    await queue.cancel(pending[0]!);
    await queue.cancel(pending[4]!);
    const views = await Promise.all(ids.map((id) => queue.view(id)));
    const idsWhere = (keep: (view: JobView) => boolean) => ascending(views.filter(keep).map((view) => view.id));
    for (const limit of [1, 3, 7, 100]) {
      expect((await walk(queue, { limit })).flat()).toEqual(ascending(ids));
      for (const status of ['PENDING', 'RUNNING', 'SUCCEEDED', 'DEAD', 'CANCELLED'] as const) {
        const listed = await walk(queue, { status, limit });
        expect(listed.flat()).toEqual(idsWhere((view) => view.status === status));
        expect(listed.every((page) => page.length <= limit)).toBe(true);
      }
      expect((await walk(queue, { type: 'a', limit })).flat()).toEqual(idsWhere((view) => view.type === 'a'));
    }
    expect(idsWhere((view) => view.status === 'RUNNING').length).toBe(3);
    await expectInvalid(() => queue.jobs({ limit: 0 }));
    await expectInvalid(() => queue.jobs({ after: 'x' }));
  });
});

describe('jobs: listing a journaled queue across a reopen', () => {
  it('lists the same jobs after a reopen as before it (the index is built anew from the journal)', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const policy = new RetryPolicy(3, 0, 0);
    const queue = openJournal(path, clock, policy);
    const ids = queue.submitMany(Array.from({ length: 7 }, (_, i) => ({ type: i % 2 === 0 ? 'a' : 'b' })));
    for (let i = 0; i < 3; i++) {
      const lease = queue.poll('w', 60_000)!;
      if (i === 0) queue.complete(lease.jobId, lease.token);
      if (i === 1) queue.fail(lease.jobId, lease.token, 'x', { permanent: true });
    }
    queue.cancel(ids[6]!);
    const statuses = ['PENDING', 'RUNNING', 'SUCCEEDED', 'DEAD', 'CANCELLED'] as const;
    const listing = (q: JobQueue) => statuses.map((status) => q.jobs({ status }).jobs.map((job) => job.id));
    const before = listing(queue);
    expect(before).toEqual([ids.slice(3, 6), [ids[2]], [ids[0]], [ids[1]], [ids[6]]]);
    closeJournal(queue);
    const reopened = openJournal(path, clock, policy);
    // The job RUNNING at the close lost its lease: PENDING again, in its place by number.
    expect(listing(reopened)).toEqual([ids.slice(2, 6), [], [ids[0]], [ids[1]], [ids[6]]]);
    expect(reopened.jobs({ type: 'b' }).jobs.map((job) => job.id)).toEqual([ids[1], ids[3], ids[5]]);
  });
});
