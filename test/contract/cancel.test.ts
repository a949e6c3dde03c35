import { expect, it } from 'vitest';
import { IllegalStateError } from '../../dist/index.js';
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

describeEachBackend('cancel outside PENDING', (backend) => {
  it('refuses a RUNNING job with IllegalStateError and leaves the lease valid', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    const error = await expectNoChange(queue, [id], () => queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
    expect(error.name).toBe('IllegalStateError');
    await queue.complete(id, lease.token);
    expect((await queue.view(id)).status).toBe('SUCCEEDED');
  });

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
    await mustPoll(queue, id);
    expect((await expectIllegalState(() => queue.cancel(id))).code).toBe('ERR_ILLEGAL_STATE');
  });
});
