import { expect, it } from 'vitest';
import { InvalidArgumentError, JobNotFoundError, StaleLeaseError } from '../../dist/index.js';
import { describeEachBackendAnd } from '../support/backends.js';
import { bad, expectNoChange, mustPoll, setup } from '../support/helpers.js';

describeEachBackendAnd('progress of a running job', (backend) => {
  it('shows no progress until the lease holder reports one', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    expect((await queue.view(id)).progress).toBeUndefined();
    await mustPoll(queue, id);
    expect((await queue.view(id)).progress).toBeUndefined();
  });

  it('shows the latest value reported, exactly', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    await queue.progress(id, lease.token, 0.1);
    await queue.progress(id, lease.token, 42.5);
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', progress: 42.5 });
    await queue.progress(id, lease.token, 0);
    expect((await queue.view(id)).progress).toBe(0);
    await queue.progress(id, lease.token, -1e300);
    expect((await queue.view(id)).progress).toBe(-1e300);
  });

  it('leaves the lease as it is', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id, 1000);
    await queue.progress(id, lease.token, 3);
    expect((await queue.view(id)).leaseUntil).toBe(lease.leaseUntil);
  });

  it('lets a lease that reported progress expire at its end, as any other', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(400);
    await queue.progress(id, lease.token, 1);
    clock.advance(599);
    await queue.progress(id, lease.token, 2);
    expect((await queue.view(id)).status).toBe('RUNNING');
    // Its end passes, and the retry's backoff (100 ms): a poll finds it again (no view first: a view would expire it itself).
    clock.advance(1 + 100);
    const again = await mustPoll(queue, id, 1000, 'w2');
    expect(again.attempt).toBe(2);
    expect(await queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 2, lastError: 'lease expired' });
    expect((await queue.view(id)).progress).toBeUndefined();
  });

  it('keeps a finished attempt’s progress on the SUCCEEDED job', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    await queue.progress(id, lease.token, 100);
    await queue.complete(id, lease.token);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', progress: 100 });
  });

  it('starts a retry with no progress', async () => {
    const s = await setup(backend);
    const { queue, clock } = s;
    const id = await queue.submit('t', 'p');
    const first = await mustPoll(queue, id);
    await queue.progress(id, first.token, 70);
    await queue.fail(id, first.token, 'boom');
    clock.advance(s.policy.maxBackoffMillis + 1);
    const second = await mustPoll(queue, id);
    expect(second.attempt).toBe(2);
    expect((await queue.view(id)).progress).toBeUndefined();
    await queue.progress(id, second.token, 5);
    expect((await queue.view(id)).progress).toBe(5);
  });

  it('starts the attempt after an expired lease with no progress', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const first = await mustPoll(queue, id, 1000);
    await queue.progress(id, first.token, 50);
    clock.advance(1000 + 100_000);
    await mustPoll(queue, id);
    expect((await queue.view(id)).progress).toBeUndefined();
  });

  it('starts a job revived by retryDead with no progress once it runs', async () => {
    const s = await setup(backend, { maxAttempts: 1 });
    const id = await s.queue.submit('t', 'p');
    const lease = await mustPoll(s.queue, id);
    await s.queue.progress(id, lease.token, 9);
    await s.queue.fail(id, lease.token, 'boom');
    expect(await s.queue.view(id)).toMatchObject({ status: 'DEAD', progress: 9 });
    await s.queue.retryDead(id);
    await mustPoll(s.queue, id);
    expect((await s.queue.view(id)).progress).toBeUndefined();
  });
});

describeEachBackendAnd('progress refused', (backend) => {
  it('refuses a stale token (an earlier attempt’s) and changes nothing', async () => {
    const s = await setup(backend);
    const { queue, clock } = s;
    const id = await queue.submit('t', 'p');
    const first = await mustPoll(queue, id);
    await queue.fail(id, first.token, 'boom');
    clock.advance(s.policy.maxBackoffMillis + 1);
    const second = await mustPoll(queue, id);
    await queue.progress(id, second.token, 1);
    await expectNoChange(queue, [id], () => queue.progress(id, first.token, 99), StaleLeaseError, 'ERR_STALE_LEASE');
    // Anything that is not a token is no lease's.
    for (const token of [String(second.token), second.token + 0.5, null]) {
      await expectNoChange(queue, [id], () => queue.progress(id, bad(token), 99), StaleLeaseError, 'ERR_STALE_LEASE');
    }
    expect((await queue.view(id)).progress).toBe(1);
  });

  it('refuses a token whose lease expired, and one of a job not RUNNING', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id, 1000);
    clock.advance(1000);
    await expectNoChange(queue, [id], () => queue.progress(id, lease.token, 5), StaleLeaseError, 'ERR_STALE_LEASE');
    expect((await queue.view(id)).progress).toBeUndefined();
    const done = await queue.submit('t', 'p');
    const doneLease = await mustPoll(queue, done);
    await queue.complete(done, doneLease.token);
    await expectNoChange(queue, [id, done], () => queue.progress(done, doneLease.token, 5), StaleLeaseError, 'ERR_STALE_LEASE');
  });

  it('refuses a value that is not a finite number, and changes nothing', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    await queue.progress(id, lease.token, 10);
    for (const value of [NaN, Infinity, -Infinity, '50', null, undefined, 10n]) {
      await expectNoChange(queue, [id], () => queue.progress(id, lease.token, bad(value)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    }
    expect((await queue.view(id)).progress).toBe(10);
  });

  it('refuses an unknown job', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await expectNoChange(queue, [id], () => queue.progress('J99', 1, 5), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
  });
});
