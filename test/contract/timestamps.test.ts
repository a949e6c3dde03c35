/**
 * A job's times (JobView's submittedAt, startedAt, finishedAt; a Lease's
 * waitMillis), read from the queue's clock (the test's ManualClock): when it
 * was accepted, when its latest lease began, when it finished; and what
 * each move does to them. On every backend, and the partitioned Redis queue.
 */
import { expect, it } from 'vitest';
import { describeEachBackendAnd } from '../support/backends.js';
import { T0, mustPoll, setup } from '../support/helpers.js';

describeEachBackendAnd('job timestamps', (backend) => {
  it('stamps the submit, each lease and the finish, each by the clock of its call', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    expect(await queue.view(id)).toMatchObject({ submittedAt: T0, startedAt: null, finishedAt: null });
    clock.advance(30);
    const lease = await mustPoll(queue, id);
    expect(lease.waitMillis).toBe(30);
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', submittedAt: T0, startedAt: T0 + 30, finishedAt: null });
    clock.advance(70);
    await queue.complete(id, lease.token);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', submittedAt: T0, startedAt: T0 + 30, finishedAt: T0 + 100 });
    // The listings show the same view.
    const page = await queue.jobs({ status: 'SUCCEEDED' });
    expect(page.jobs.find((job) => job.id === id)).toMatchObject({ submittedAt: T0, startedAt: T0 + 30, finishedAt: T0 + 100 });
  });

  it('counts the wait from runAt for a delayed job, and from the submit for a runAt already past', async () => {
    const { queue, clock } = await setup(backend);
    const delayed = await queue.submit('t', 'later', 0, T0 + 500);
    const late = await queue.submit('t', 'past', 0, T0 - 2_000);
    clock.advance(40);
    expect(await mustPoll(queue, late)).toMatchObject({ waitMillis: 40 });
    clock.advance(500);
    expect(await mustPoll(queue, delayed)).toMatchObject({ waitMillis: 40 });
    expect(await queue.view(delayed)).toMatchObject({ submittedAt: T0, startedAt: T0 + 540, nextRunAt: T0 + 500 });
  });

  it('keeps the latest lease start through a retry and a release; a new lease starts anew and waits from its runAt', async () => {
    const { queue, clock } = await setup(backend, { baseBackoffMillis: 100, maxBackoffMillis: 100 });
    const id = await queue.submit('t', 'p');
    clock.advance(10);
    const first = await mustPoll(queue, id);
    clock.advance(20);
    await queue.fail(id, first.token, 'boom');
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', startedAt: T0 + 10, finishedAt: null, nextRunAt: T0 + 130 });
    clock.advance(150);
    const second = await mustPoll(queue, id);
    expect(second.waitMillis).toBe(50);
    expect(await queue.view(id)).toMatchObject({ startedAt: T0 + 180 });
    clock.advance(5);
    await queue.release(id, second.token);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', submittedAt: T0, startedAt: T0 + 180, finishedAt: null });
  });

  it('stamps an expiry that dead-letters at the lease end; retryDead clears finishedAt and keeps the rest', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', 'p');
    clock.advance(5);
    await mustPoll(queue, id, 200);
    clock.advance(1_000);
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', startedAt: T0 + 5, finishedAt: T0 + 205 });
    expect((await queue.deadLetters()).find((job) => job.id === id)).toMatchObject({ finishedAt: T0 + 205 });
    clock.advance(1);
    await queue.retryDead(id);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', submittedAt: T0, startedAt: T0 + 5, finishedAt: null });
    clock.advance(9);
    const lease = await mustPoll(queue, id);
    expect(lease.waitMillis).toBe(9);
    clock.advance(3);
    await queue.fail(id, lease.token, 'again', { permanent: true });
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', startedAt: T0 + 1_015, finishedAt: T0 + 1_018 });
  });

  it('stamps a cancel, which never leased the job', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p', 0, T0 + 1_000);
    clock.advance(25);
    await queue.cancel(id);
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', submittedAt: T0, startedAt: null, finishedAt: T0 + 25 });
  });
});
