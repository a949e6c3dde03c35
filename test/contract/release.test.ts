/**
 * release(jobId, token): a worker that stops before its job ends (a shutdown,
 * not a failure) hands the lease back — PENDING, ready now, the interrupted
 * attempt not counted, no backoff, lastError kept — and its token is refused
 * from then on. On every backend.
 */
import { expect, it } from 'vitest';
import { InvalidArgumentError, JobNotFoundError, StaleLeaseError } from '../../dist/index.js';
import { describeEachBackend } from '../support/backends.js';
import { T0, bad, expectNoChange, expectStale, mustPoll, setup } from '../support/helpers.js';

describeEachBackend('release of a lease', (backend) => {
  it('hands a RUNNING job back PENDING and ready now, its attempt not counted and no backoff', async () => {
    const { queue, clock } = await setup(backend, { baseBackoffMillis: 5_000, maxBackoffMillis: 5_000 });
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    clock.advance(40);
    await queue.release(id, lease.token);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, nextRunAt: T0 + 40, lastError: null, leaseUntil: null });
    expect(await queue.stats()).toMatchObject({ pending: 1, ready: 1, delayed: 0, running: 0 });
    expect(await mustPoll(queue, id)).toMatchObject({ jobId: id, attempt: 1 });
  });

  it('keeps the lastError and the count of the attempts that did fail', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 3 });
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, 'first try');
    clock.advance(100);
    const second = await mustPoll(queue, id);
    expect(second.attempt).toBe(2);
    await queue.release(id, second.token);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'first try', nextRunAt: T0 + 100 });
  });

  it('never uses up the last attempt: a job released on its only attempt runs that attempt again', async () => {
    const { queue } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', 'p');
    for (let i = 0; i < 3; i++) await queue.release(id, (await mustPoll(queue, id)).token);
    const lease = await mustPoll(queue, id);
    expect(lease.attempt).toBe(1);
    await queue.fail(id, lease.token, 'the real failure');
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: 'the real failure' });
  });

  it('refuses the released token afterwards: complete, fail, extend and release are stale', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    await queue.release(id, lease.token);
    await expectStale(() => queue.complete(id, lease.token));
    await expectStale(() => queue.fail(id, lease.token, 'late'));
    await expectStale(() => queue.extend(id, lease.token, 1_000));
    await expectStale(() => queue.release(id, lease.token));
    // The next lease is a new one, and works.
    const next = await mustPoll(queue, id);
    expect(next.token).not.toBe(lease.token);
    await queue.complete(id, next.token);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it('refuses, changing nothing, a token that is not the current lease, an expired lease, a PENDING job and an unknown id', async () => {
    const { queue, clock } = await setup(backend);
    const running = await queue.submit('t', 'a');
    const expired = await queue.submit('t', 'b');
    const pending = await queue.submit('t', 'c');
    const lease = await mustPoll(queue, running, 5_000);
    const short = await mustPoll(queue, expired, 100);
    clock.advance(100);
    const ids = [running, expired, pending, 'J99'];
    await expectNoChange(queue, ids, () => queue.release(running, lease.token + 1000), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, ids, () => queue.release(expired, short.token), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, ids, () => queue.release(pending, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    await expectNoChange(queue, ids, () => queue.release('J99', lease.token), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
    await expectNoChange(queue, ids, () => queue.release('x', lease.token), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
  });

  it('puts the released job back in its place in the ready order (priority, then runAt, then submission)', async () => {
    const { queue, clock } = await setup(backend);
    const low = await queue.submit('t', 'low', 0);
    const high = await queue.submit('t', 'high', 5);
    const lease = await mustPoll(queue, high);
    clock.advance(10);
    await queue.release(high, lease.token);
    expect((await mustPoll(queue)).jobId).toBe(high);
    expect((await mustPoll(queue)).jobId).toBe(low);
  });
});

describeEachBackend('release with a delay (snooze)', (backend) => {
  it('hands the job back PENDING, ready delayMillis from now, its attempt not counted', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    clock.advance(40);
    await queue.release(id, lease.token, { delayMillis: 1_000 });
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, nextRunAt: T0 + 1_040, leaseUntil: null, lastError: null });
    expect(await queue.stats()).toMatchObject({ pending: 1, ready: 0, delayed: 1, running: 0 });
    await expectStale(() => queue.complete(id, lease.token));
    clock.advance(999);
    expect(await queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(1);
    expect(await mustPoll(queue, id)).toMatchObject({ attempt: 1 });
  });

  it('never spends an attempt: a job snoozed on its only attempt, again and again, still gets exactly that attempt', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', 'p');
    for (let i = 0; i < 5; i++) {
      const lease = await mustPoll(queue, id);
      expect(lease.attempt).toBe(1);
      await queue.release(id, lease.token, { delayMillis: 100 });
      clock.advance(100);
    }
    const last = await mustPoll(queue, id);
    expect(last.attempt).toBe(1);
    await queue.fail(id, last.token, 'the real failure');
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: 'the real failure' });
  });

  it('with delayMillis 0 is the plain release: ready now', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.release(id, (await mustPoll(queue, id)).token, { delayMillis: 0 });
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, nextRunAt: T0 });
    await mustPoll(queue, id);
  });

  it('refuses a bad delay or options with InvalidArgumentError, changing nothing: the lease stays valid', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    for (const options of [{ delayMillis: -1 }, { delayMillis: Number.NaN }, { delayMillis: Infinity }, { delayMillis: bad('5') }, bad({ delay: 5 }), bad('later'), bad(null)]) {
      await expectNoChange(queue, [id], () => queue.release(id, lease.token, options), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    }
    await queue.complete(id, lease.token);
    expect((await queue.view(id)).status).toBe('SUCCEEDED');
  });
});
