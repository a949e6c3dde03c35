import { expect, it } from 'vitest';
import { IllegalStateError, StaleLeaseError } from '../../dist/index.js';
import { describeEachBackend } from '../support/backends.js';
import { T0, expectIllegalState, expectNoChange, expectStale, killJob, mustPoll, setup } from '../support/helpers.js';

describeEachBackend('cancel from PENDING', (backend) => {
  it('cancels a ready PENDING job', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.cancel(id);
    expect(await queue.view(id)).toMatchObject({ id, status: 'CANCELLED', attempts: 0, leaseUntil: null, payload: 'p' });
  });

  it('cancels a delayed PENDING job', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p', 0, T0 + 60_000);
    await queue.cancel(id);
    expect((await queue.view(id)).status).toBe('CANCELLED');
  });

  it('cancels a job waiting out its retry backoff, keeping its history', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, 'first');
    await queue.cancel(id);
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1, lastError: 'first' });
  });

  it('cancels a job whose lease has expired (expiry made it PENDING again)', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(1000);
    await queue.cancel(id);
    expect((await queue.view(id)).status).toBe('CANCELLED');
    await expectStale(() => queue.complete(id, lease.token));
  });

  it('cancels a job revived by retryDead', async () => {
    const s = await setup(backend, { maxAttempts: 1 });
    const id = await s.queue.submit('t', 'p');
    await killJob(s, id);
    await s.queue.retryDead(id);
    await s.queue.cancel(id);
    expect((await s.queue.view(id)).status).toBe('CANCELLED');
  });

  it('cancels only the named job', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    await queue.submit('t', 'c'); // J3
    await queue.cancel('J2');
    const statuses: string[] = [];
    for (const id of ['J1', 'J2', 'J3']) statuses.push((await queue.view(id)).status);
    expect(statuses).toEqual(['PENDING', 'CANCELLED', 'PENDING']);
  });
});

describeEachBackend('a cancelled job', (backend) => {
  it('is never polled, not even after its runAt passes', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', 'ready', 100); // J1
    await queue.submit('t', 'delayed', 100, T0 + 500); // J2
    await queue.submit('t', 'other'); // J3
    await queue.cancel('J1');
    await queue.cancel('J2');
    clock.advance(1_000_000);
    const other = await mustPoll(queue, 'J3');
    await queue.complete('J3', other.token);
    expect(await queue.poll('w', 1000)).toBeUndefined();
    clock.advance(1_000_000);
    expect(await queue.poll('w', 1000)).toBeUndefined();
  });

  it('is neither pending nor dead in the counts', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b', 0, T0 + 100); // J2
    await queue.cancel('J1');
    await queue.cancel('J2');
    expect(await queue.queueDepth()).toBe(0);
    expect(await queue.dlqDepth()).toBe(0);
    expect(await queue.deadLetters()).toEqual([]);
    expect(await queue.stats()).toEqual({ pending: 0, ready: 0, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 2, paused: false });
  });

  it('cannot be revived by retryDead', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.cancel(id);
    await expectIllegalState(() => queue.retryDead(id));
    expect((await queue.view(id)).status).toBe('CANCELLED');
  });
});

describeEachBackend('cancel of a RUNNING job', (backend) => {
  it('ends the job CANCELLED, its attempt spent', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await mustPoll(queue, id);
    await queue.cancel(id);
    expect(await queue.view(id)).toMatchObject({ id, status: 'CANCELLED', attempts: 1, lastError: null, payload: 'p' });
    expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 0, dead: 0, cancelled: 1 });
  });

  it("refuses the holder's late complete, fail, extend and release as a zombie's, changing nothing", async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    await queue.cancel(id);
    await expectNoChange(queue, [id], () => queue.complete(id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, [id], () => queue.complete(id, lease.token, { a: 1 }), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, [id], () => queue.completeAndPoll(id, lease.token, 'w1', 1_000), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, [id], () => queue.fail(id, lease.token, 'late'), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, [id], () => queue.extend(id, lease.token, 1_000), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, [id], () => queue.release(id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    expect((await queue.view(id)).status).toBe('CANCELLED');
  });

  it('keeps the lastError of an earlier attempt', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, 'first');
    clock.advance(60_000);
    await mustPoll(queue, id);
    await queue.cancel(id);
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 2, lastError: 'first' });
  });

  it('is never leased again, and its lease never expires into a retry', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await mustPoll(queue, id, 1_000);
    await queue.cancel(id);
    clock.advance(1_000_000);
    expect(await queue.poll('w2', 1_000)).toBeUndefined();
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1, lastError: null });
    expect(await queue.queueDepth()).toBe(0);
  });

  it('settles a finished() wait started while it ran, as cancelled', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await mustPoll(queue, id);
    const waiting = queue.finished(id);
    await queue.cancel(id);
    await expect(waiting).rejects.toMatchObject({ code: 'ERR_JOB_FAILED' });
  });

  it('leaves the other running jobs and their leases alone', async () => {
    const { queue } = await setup(backend);
    const a = await queue.submit('t', 'a');
    const b = await queue.submit('t', 'b');
    await mustPoll(queue, a);
    const other = await mustPoll(queue, b);
    await queue.cancel(a);
    await queue.complete(b, other.token);
    expect([(await queue.view(a)).status, (await queue.view(b)).status]).toEqual(['CANCELLED', 'SUCCEEDED']);
  });
});

describeEachBackend('cancel of a finished job', (backend) => {
  it('refuses a SUCCEEDED job', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.complete(id, (await mustPoll(queue, id)).token);
    await expectNoChange(queue, [id], () => queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('refuses a DEAD job, which stays in the dead letters', async () => {
    const s = await setup(backend, { maxAttempts: 1 });
    const id = await s.queue.submit('t', 'p');
    await killJob(s, id);
    await expectNoChange(s.queue, [id], () => s.queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
    expect((await s.queue.deadLetters()).map((v) => v.id)).toEqual([id]);
  });

  it('refuses a job that is already CANCELLED', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.cancel(id);
    await expectNoChange(queue, [id], () => queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('uses the plain IllegalStateError code, not the stale-lease one', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.complete(id, (await mustPoll(queue, id)).token);
    expect((await expectIllegalState(() => queue.cancel(id))).code).toBe('ERR_ILLEGAL_STATE');
  });
});
