import { expect, it } from 'vitest';
import { IllegalStateError, JobNotFoundError } from '../../dist/index.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { T0, expectNoChange, expectNotFound, killJob, mustPoll, setup } from '../support/helpers.js';

/** The code view rejects `id` with, or its status. */
async function statusOf(queue: ContractQueue, id: string): Promise<string> {
  try {
    return (await queue.view(id)).status;
  } catch (error) {
    return (error as { code?: string }).code ?? 'error';
  }
}

describeEachBackend('remove of a job that is not RUNNING', (backend) => {
  it('removes a ready PENDING job: gone from view, counts and polls', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const other = await queue.submit('t', 'q');
    await queue.remove(id);
    const error = await expectNotFound(() => queue.view(id));
    expect(error.message).toMatch(/removed/);
    expect(await queue.stats()).toMatchObject({ pending: 1, ready: 1 });
    expect((await mustPoll(queue)).jobId).toBe(other);
    expect(await queue.poll('w', 1_000)).toBeUndefined();
  });

  it('removes a delayed PENDING job, which never comes due', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'later', 0, T0 + 500);
    await queue.remove(id);
    clock.advance(1_000);
    expect(await queue.poll('w', 1_000)).toBeUndefined();
    expect(await statusOf(queue, id)).toBe('ERR_JOB_NOT_FOUND');
    expect((await queue.stats()).pending).toBe(0);
  });

  it('removes a SUCCEEDED job with its result, and a CANCELLED one', async () => {
    const { queue } = await setup(backend);
    const done = await queue.submit('t', 'p');
    await queue.complete(done, (await mustPoll(queue, done)).token, { answer: 42 });
    const cancelled = await queue.submit('t', 'c');
    await queue.cancel(cancelled);
    await queue.remove(done);
    await queue.remove(cancelled);
    await expectNotFound(() => queue.finished(done));
    expect([await statusOf(queue, done), await statusOf(queue, cancelled)]).toEqual(['ERR_JOB_NOT_FOUND', 'ERR_JOB_NOT_FOUND']);
    expect(await queue.stats()).toMatchObject({ succeeded: 0, cancelled: 0 });
    expect((await queue.jobs()).jobs).toEqual([]);
  });

  it('removes a DEAD job: out of the dead letters, which keep the others', async () => {
    const s = await setup(backend, { maxAttempts: 1 });
    const first = await s.queue.submit('t', 'a');
    const second = await s.queue.submit('t', 'b');
    await killJob(s, first);
    await killJob(s, second);
    await s.queue.remove(first);
    expect((await s.queue.deadLetters()).map((job) => job.id)).toEqual([second]);
    expect(await s.queue.dlqDepth()).toBe(1);
    await expectNotFound(() => s.queue.retryDead(first));
    await s.queue.retryDead(second);
    expect((await mustPoll(s.queue)).jobId).toBe(second);
  });

  it('frees the idempotent key of the removed job at once', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p', { key: 'order-7', keyTtlMillis: 60_000 });
    expect(await queue.submit('t', 'again', { key: 'order-7' })).toBe(id);
    await queue.remove(id);
    const next = await queue.submit('t', 'new', { key: 'order-7' });
    expect(next).not.toBe(id);
    expect((await queue.view(next)).payload).toBe('new');
  });

  it('removes a job whose lease ran out (the expiry made it PENDING again), and the old token is stale', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id, 1_000);
    clock.advance(1_000);
    await queue.remove(id);
    await expectNotFound(() => queue.complete(id, lease.token));
  });

  it('wakes a finished() waiter on a PENDING job, which rejects with JobNotFoundError', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const waiting = queue.finished(id, { timeoutMillis: 60_000 });
    // Registered before the remove: a view in between orders it on every backend.
    await queue.view(id);
    await queue.remove(id);
    await expect(waiting).rejects.toBeInstanceOf(JobNotFoundError);
  });
});

describeEachBackend('remove refused', (backend) => {
  it('refuses a RUNNING job with IllegalStateError, changing nothing: the lease stays valid', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p', { key: 'k' });
    const lease = await mustPoll(queue, id, 60_000);
    const error = await expectNoChange(queue, [id], () => queue.remove(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
    expect(error.message).toMatch(/RUNNING/);
    expect(await queue.submit('t', 'again', { key: 'k' })).toBe(id);
    await queue.complete(id, lease.token);
    expect((await queue.view(id)).status).toBe('SUCCEEDED');
  });

  it('refuses an unknown id, and a second remove of the same job, with JobNotFoundError', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await expectNoChange(queue, [id], () => queue.remove('J99'), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
    await queue.remove(id);
    await expectNotFound(() => queue.remove(id));
    await expectNotFound(() => queue.remove('not an id'));
  });
});
