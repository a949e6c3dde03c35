/**
 * The bull-board adapter on each backend, without a browser: the counts and
 * tabs it reports for jobs in every status, what a job shows, and the
 * board's actions mapped onto leasehold's calls (or refused, changing nothing).
 */
import { expect, it, onTestFinished } from 'vitest';
import {
  JobStatus, ManualClock, PartitionedRedisQueue, RetryPolicy, UnsupportedOperationError,
} from '../../dist/index.js';
import { createDashboardAdapter, type DashboardQueue, type LeaseholdBoardAdapter } from '../../dist/dashboard/index.js';
import { describeEachBackend } from '../support/backends.js';
import { fillEveryStatus } from './dashboard-fixture.js';
import { T0, expectError, expectIllegalState, setup, snapshot } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

async function adapterOver(queue: DashboardQueue, clock: ManualClock, readOnly = false): Promise<LeaseholdBoardAdapter> {
  return createDashboardAdapter(queue, { name: 'images', readOnly, time: clock });
}

async function job(adapter: LeaseholdBoardAdapter, id: string) {
  const found = await adapter.getJob(id);
  expect(found, `expected the adapter to find ${id}`).toBeDefined();
  return found!;
}

describeEachBackend('dashboard adapter', (backend) => {
  it('counts ready jobs as waiting, delayed as delayed, RUNNING as active, SUCCEEDED as completed and DEAD as failed', async () => {
    const { queue, clock } = await setup(backend);
    await fillEveryStatus(queue, clock);
    await queue.submit('resize', 'one more ready');
    const adapter = await adapterOver(queue, clock);
    const stats = await queue.stats();
    const counts = await adapter.getJobCounts();
    expect(counts).toEqual({
      latest: 0, active: 1, waiting: 2, 'waiting-children': 0, prioritized: 0, completed: 1, failed: 1, delayed: 1, paused: 0,
    });
    expect([counts.waiting, counts.delayed, counts.active, counts.completed, counts.failed]).toEqual([stats.ready, stats.delayed, stats.running, stats.succeeded, stats.dead]);
  });

  it('says in the description how many jobs are CANCELLED, as they have no tab', async () => {
    const { queue, clock } = await setup(backend);
    await fillEveryStatus(queue, clock);
    await queue.cancel(await queue.submit('email', 'x'));
    const adapter = await adapterOver(queue, clock);
    await adapter.getJobCounts();
    expect(adapter.getDescription()).toBe('2 cancelled (no tab on this board)');
  });

  it('puts each job on the tab of its status, a delayed one on waiting once its runAt has come', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    const states = async () => {
      const found: Record<string, string> = {};
      // One call at a time: the conformance harness refuses overlapping ones.
      for (const [name, id] of Object.entries(ids)) found[name] = await (await job(adapter, id)).getState();
      return found;
    };
    expect(await states()).toEqual({ succeeded: 'completed', dead: 'failed', running: 'active', cancelled: 'unknown', delayed: 'delayed', ready: 'waiting' });
    clock.advance(60_000);
    expect((await states()).delayed).toBe('waiting');
  });

  it("lists each tab's jobs in submission order, as jobs() has them, and the latest view all but the cancelled", async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const more = [await queue.submit('resize', 'x'), await queue.submit('resize', 'y')];
    const adapter = await adapterOver(queue, clock);
    const listed = async (...tabs: Parameters<LeaseholdBoardAdapter['getJobs']>[0]) => (await adapter.getJobs(tabs)).map((found) => found.toJSON().id);
    expect(await listed('waiting')).toEqual([ids.ready, ...more]);
    expect(await listed('delayed')).toEqual([ids.delayed]);
    expect(await listed('active')).toEqual([ids.running]);
    expect(await listed('completed')).toEqual([ids.succeeded]);
    expect(await listed('failed')).toEqual([ids.dead]);
    const all = (await queue.jobs()).jobs.filter((view) => view.status !== JobStatus.CANCELLED).map((view) => view.id);
    expect(await listed('active', 'waiting', 'delayed', 'failed', 'completed')).toEqual(all);
  });

  it('pages a tab by its start and end, both counted from 0 and included', async () => {
    const { queue, clock } = await setup(backend);
    const ready = [];
    for (let n = 0; n < 7; n++) ready.push(await queue.submit('resize', String(n)));
    const adapter = await adapterOver(queue, clock);
    expect((await adapter.getJobs(['waiting'], 2, 4)).map((found) => found.toJSON().id)).toEqual(ready.slice(2, 5));
    expect((await adapter.getJobs(['waiting'], 5, 9)).map((found) => found.toJSON().id)).toEqual(ready.slice(5));
  });

  it('cleans the waiting tab by cancelling its jobs, and empties the queue by cancelling every PENDING job', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    await adapter.clean('wait');
    expect((await queue.view(ids.ready)).status).toBe(JobStatus.CANCELLED);
    expect((await queue.view(ids.delayed)).status).toBe(JobStatus.PENDING);
    await adapter.empty();
    expect((await queue.view(ids.delayed)).status).toBe(JobStatus.CANCELLED);
    expect(await queue.stats()).toMatchObject({ pending: 0, running: 1, succeeded: 1, dead: 1, cancelled: 3 });
  });

  it('shows a job with its type, parsed JSON payload, attempts, lastError, result, worker and runAt', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    const dead = (await job(adapter, ids.dead)).toJSON();
    const view = await queue.view(ids.dead);
    expect(dead).toMatchObject({
      id: ids.dead, name: 'parse', data: '{oops', attemptsMade: 1, failedReason: 'cannot parse {oops: unexpected end of input',
      processedBy: 'worker-2', timestamp: view.nextRunAt, opts: { attempts: 1, priority: 0 },
    });
    expect((await job(adapter, ids.succeeded)).toJSON()).toMatchObject({ returnvalue: { thumbnail: 'a-64.png', bytes: 1234 }, failedReason: '' });
    const running = (await job(adapter, ids.running)).toJSON();
    expect(running).toMatchObject({ name: 'upload', data: { file: 'c.png' }, attemptsMade: 1, failedReason: '', processedBy: 'worker-3', priority: 5 });
    expect(running.opts.leaseUntil).toBe((await queue.view(ids.running)).leaseUntil);
  });

  it('shows a job\'s group among its options, none for a job without one', async () => {
    const { queue, clock } = await setup(backend);
    const grouped = await queue.submit('resize', '{}', { group: 'tenant-7' });
    const plain = await queue.submit('resize', '{}');
    const adapter = await adapterOver(queue, clock);
    expect((await job(adapter, grouped)).toJSON().opts).toMatchObject({ group: 'tenant-7' });
    expect((await job(adapter, plain)).toJSON().opts).not.toHaveProperty('group');
  });

  it('shows a job\'s progress as { progress } (bull-board\'s Progress tab shows objects only), none as 0', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('resize', '{}');
    const lease = await queue.poll('worker-1', 1_000);
    const adapter = await adapterOver(queue, clock);
    expect((await job(adapter, id)).toJSON().progress).toBe(0);
    await queue.progress(id, lease!.token, 62.5);
    expect((await job(adapter, id)).toJSON().progress).toEqual({ progress: 62.5 });
    await queue.progress(id, lease!.token, 0);
    expect((await job(adapter, id)).toJSON().progress).toEqual({ progress: 0 });
  });

  it('gives a job\'s log to its Logs tab, with a first line counting the lines dropped; none for a job gone', async () => {
    const { queue, clock } = await setup(backend, { options: { maxLogLines: 2 } });
    const id = await queue.submit('resize', '{}');
    const adapter = await adapterOver(queue, clock);
    expect(await adapter.getJobLogs(id)).toEqual([]);
    await queue.log(id, 'one');
    expect(await adapter.getJobLogs(id)).toEqual(['one']);
    await queue.log(id, 'two');
    await queue.log(id, 'three');
    expect(await adapter.getJobLogs(id)).toEqual(['(1 older line dropped)', 'two', 'three']);
    await queue.log(id, 'four');
    expect(await adapter.getJobLogs(id)).toEqual(['(2 older lines dropped)', 'three', 'four']);
    expect(await adapter.getJobLogs('J999')).toEqual([]);
  });

  it('shows when a job was submitted, started its latest lease and finished (timestamp, processedOn, finishedOn)', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('resize', '{}');
    const waiting = await queue.submit('resize', '{}');
    clock.advance(10);
    const lease = await queue.poll('worker-1', 1_000);
    expect(lease?.jobId).toBe(id);
    clock.advance(20);
    const adapter = await adapterOver(queue, clock);
    expect((await job(adapter, id)).toJSON()).toMatchObject({ timestamp: T0, processedOn: T0 + 10, finishedOn: null });
    await queue.complete(id, lease!.token);
    expect((await job(adapter, id)).toJSON()).toMatchObject({ timestamp: T0, processedOn: T0 + 10, finishedOn: T0 + 30 });
    expect((await job(adapter, waiting)).toJSON()).toMatchObject({ timestamp: T0, processedOn: null, finishedOn: null });
  });

  it('finds no job for an unknown or malformed id', async () => {
    const { queue, clock } = await setup(backend);
    const adapter = await adapterOver(queue, clock);
    expect(await adapter.getJob('J999')).toBeUndefined();
    expect(await adapter.getJob('nope')).toBeUndefined();
  });

  it('retries a failed job through retryDead: it is PENDING again, ready, with attempts 0', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    await (await job(adapter, ids.dead)).retry('failed');
    expect(await queue.view(ids.dead)).toMatchObject({ status: JobStatus.PENDING, attempts: 0 });
    expect((await adapter.getJobCounts()).failed).toBe(0);
  });

  it('refuses to retry a completed job, and changes nothing', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    const before = await snapshot(queue, Object.values(ids));
    const error = await expectIllegalState(() => job(adapter, ids.succeeded).then((found) => found.retry('completed')));
    expect((error as unknown as { statusCode: number }).statusCode).toBe(409);
    expect(await snapshot(queue, Object.values(ids))).toEqual(before);
  });

  it('removes a waiting or delayed job by cancelling it', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    await (await job(adapter, ids.ready)).remove();
    await (await job(adapter, ids.delayed)).remove();
    expect((await queue.view(ids.ready)).status).toBe(JobStatus.CANCELLED);
    expect((await queue.view(ids.delayed)).status).toBe(JobStatus.CANCELLED);
    expect((await queue.stats()).cancelled).toBe(3);
  });

  it('refuses to remove a finished job, clean finished tabs or obliterate, and changes nothing', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    const before = await snapshot(queue, Object.values(ids));
    for (const id of [ids.succeeded, ids.dead]) {
      const refusal = await expectError(() => job(adapter, id).then((found) => found.remove()), UnsupportedOperationError, 'ERR_UNSUPPORTED');
      expect((refusal as unknown as { statusCode: number }).statusCode).toBe(405);
    }
    await expectError(() => adapter.clean('completed'), UnsupportedOperationError, 'ERR_UNSUPPORTED');
    await expectError(() => adapter.obliterate(), UnsupportedOperationError, 'ERR_UNSUPPORTED');
    expect(await snapshot(queue, Object.values(ids))).toEqual(before);
  });

  it('promotes a delayed job, changes its delay and priority, and edits a waiting job\'s data through the queue\'s edits', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    await (await job(adapter, ids.delayed)).changeDelay!(5_000);
    expect((await queue.view(ids.delayed)).nextRunAt).toBe(clock.now() + 5_000);
    await (await job(adapter, ids.delayed)).promote();
    expect(await queue.view(ids.delayed)).toMatchObject({ status: JobStatus.PENDING, nextRunAt: clock.now() });
    await (await job(adapter, ids.ready)).updateData!({ file: 'z.png' });
    expect((await queue.view(ids.ready)).payload).toBe('{"file":"z.png"}');
    await (await job(adapter, ids.ready)).changePriority!({ priority: 4 });
    expect((await queue.view(ids.ready)).priority).toBe(4);
  });

  it('promotes every delayed job with promote all', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const second = await queue.submit('email', 'later', { runAt: clock.now() + 1_000 });
    const adapter = await adapterOver(queue, clock);
    await adapter.promoteAll();
    expect((await queue.stats()).delayed).toBe(0);
    for (const id of [ids.delayed, second]) expect((await queue.view(id)).nextRunAt).toBe(clock.now());
  });

  it('refuses to promote or edit a job that is not PENDING (409), and changes nothing', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    const before = await snapshot(queue, Object.values(ids));
    for (const id of [ids.running, ids.succeeded, ids.dead, ids.cancelled]) {
      const refusal = await expectIllegalState(() => job(adapter, id).then((found) => found.promote()));
      expect((refusal as unknown as { statusCode: number }).statusCode).toBe(409);
      await expectIllegalState(() => job(adapter, id).then((found) => found.updateData!({ file: 'z.png' })));
    }
    expect(await snapshot(queue, Object.values(ids))).toEqual(before);
  });

  it('refuses to remove a RUNNING job, and changes nothing', async () => {
    const { queue, clock } = await setup(backend);
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    const before = await snapshot(queue, Object.values(ids));
    await expectIllegalState(() => job(adapter, ids.running).then((found) => found.remove()));
    expect(await snapshot(queue, Object.values(ids))).toEqual(before);
  });

  it('pauses and resumes the queue', async () => {
    const { queue, clock } = await setup(backend);
    const adapter = await adapterOver(queue, clock);
    await adapter.pause();
    expect(await queue.isPaused()).toBe(true);
    expect(await adapter.isPaused()).toBe(true);
    await adapter.resume();
    expect(await queue.isPaused()).toBe(false);
  });

  it('adds a job as a submit: its data as the JSON payload, delay and attempts as options', async () => {
    const { queue, clock } = await setup(backend);
    const adapter = await adapterOver(queue, clock);
    const added = (await adapter.addJob('resize', { file: 'd.png' }, { delay: 5_000, attempts: 2 })).toJSON();
    const view = await queue.view(String(added.id));
    expect(view).toMatchObject({ type: 'resize', payload: '{"file":"d.png"}', maxAttempts: 2, nextRunAt: clock.now() + 5_000, status: JobStatus.PENDING });
  });

  it('is read-only by default, with retries off', async () => {
    const { queue, clock } = await setup(backend);
    const adapter = await createDashboardAdapter(queue, { time: clock });
    expect([adapter.readOnlyMode, adapter.allowRetries, adapter.allowCompletedRetries, adapter.getName()]).toEqual([true, false, false, 'default']);
  });
});

describeRedis('dashboard adapter over a PartitionedRedisQueue', () => {
  it('counts the jobs of every partition on their tabs, and retries a failed job in its partition', async () => {
    const clock = new ManualClock(T0);
    const queue = await PartitionedRedisQueue.connect({ redis: (await fileRedis()).url, name: 'dashboard', partitions: 3, policy: new RetryPolicy(3, 100, 10_000), time: clock });
    onTestFinished(() => queue.close());
    const ids = await fillEveryStatus(queue, clock);
    const adapter = await adapterOver(queue, clock);
    expect(await adapter.getJobCounts()).toMatchObject({ active: 1, waiting: 1, delayed: 1, completed: 1, failed: 1 });
    await (await job(adapter, ids.dead)).retry('failed');
    expect(await queue.view(ids.dead)).toMatchObject({ status: JobStatus.PENDING, attempts: 0 });
  });
});
