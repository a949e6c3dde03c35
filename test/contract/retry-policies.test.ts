import { expect, it } from 'vitest';
import { InvalidArgumentError, RetryPolicy } from '../../dist/index.js';
import { describeEachBackend } from '../support/backends.js';
import { bad, expectNoChange, mustPoll, setup, type Setup } from '../support/helpers.js';

/** Fails the lease of `jobId` now and answers its view: its status, attempts, runAt. */
async function failOnce(s: Setup, jobId: string): Promise<{ status: string; attempts: number; nextRunAt: number }> {
  const lease = await mustPoll(s.queue, jobId);
  await s.queue.fail(jobId, lease.token, 'boom');
  const { status, attempts, nextRunAt } = await s.queue.view(jobId);
  return { status, attempts, nextRunAt };
}

describeEachBackend('retry policies per job type', (backend) => {
  it("gives a type's jobs its attempts and its backoff; other types keep the queue's", async () => {
    // The queue's own: 3 attempts, 100 ms doubling.
    const s = await setup(backend);
    await s.queue.setRetryPolicy('email', new RetryPolicy(2, 5_000, 5_000));
    const email = await s.queue.submit('email', 'a');
    const thumb = await s.queue.submit('thumb', 'b');
    expect((await s.queue.view(email)).maxAttempts).toBe(2);
    expect((await s.queue.view(thumb)).maxAttempts).toBe(3);

    const now = s.clock.now();
    expect(await failOnce(s, email)).toEqual({ status: 'PENDING', attempts: 1, nextRunAt: now + 5_000 });
    expect(await failOnce(s, thumb)).toEqual({ status: 'PENDING', attempts: 1, nextRunAt: now + 100 });
    s.clock.advance(5_000);
    // Both due: `thumb` first, due since its shorter backoff ran out; it has a third attempt, `email` had only two.
    expect((await failOnce(s, thumb)).status).toBe('PENDING');
    expect((await failOnce(s, email)).status).toBe('DEAD');
  });

  it("gives an expired lease the type's backoff too", async () => {
    const s = await setup(backend);
    await s.queue.setRetryPolicy('email', new RetryPolicy(4, 7_000, 7_000));
    const email = await s.queue.submit('email', 'a');
    const lease = await mustPoll(s.queue, email, 1_000);
    s.clock.advance(1_000);
    expect(await s.queue.view(email)).toMatchObject({ status: 'PENDING', attempts: 1, nextRunAt: lease.leaseUntil + 7_000 });
  });

  it("keeps a job's own maxAttempts over its type's", async () => {
    const s = await setup(backend);
    await s.queue.setRetryPolicy('email', new RetryPolicy(2, 0, 0));
    const own = await s.queue.submit('email', 'a', { maxAttempts: 5 });
    expect((await s.queue.view(own)).maxAttempts).toBe(5);
  });

  it('fixes the attempts at submit: a job submitted before the policy keeps the queue\'s, one after its removal too', async () => {
    const s = await setup(backend);
    const before = await s.queue.submit('email', 'a');
    await s.queue.setRetryPolicy('email', new RetryPolicy(7, 0, 0));
    // Polled first, by its priority.
    const during = await s.queue.submit('email', 'b', { priority: 9 });
    await s.queue.setRetryPolicy('email', null);
    const after = await s.queue.submit('email', 'c');
    expect((await s.queue.view(before)).maxAttempts).toBe(3);
    expect((await s.queue.view(during)).maxAttempts).toBe(7);
    expect((await s.queue.view(after)).maxAttempts).toBe(3);
    // Its backoff is its type's no longer: the queue's 100 ms.
    const now = s.clock.now();
    expect(await failOnce(s, during)).toMatchObject({ status: 'PENDING', nextRunAt: now + 100 });
  });

  it('lists each type with its policy, by type, and forgets a removed one', async () => {
    const s = await setup(backend);
    expect(await s.queue.retryPolicies()).toEqual([]);
    await s.queue.setRetryPolicy('zeta', new RetryPolicy(2, 10, 20, { jitter: 'full' }));
    await s.queue.setRetryPolicy('alpha', new RetryPolicy(9, 0, 0));
    await s.queue.setRetryPolicy('alpha', new RetryPolicy(4, 30, 40, { jitter: 'equal' }));
    const listed = await s.queue.retryPolicies();
    expect(listed.map(({ type, policy }) => [type, policy.maxAttempts, policy.baseBackoffMillis, policy.maxBackoffMillis, policy.jitter])).toEqual([
      ['alpha', 4, 30, 40, 'equal'],
      ['zeta', 2, 10, 20, 'full'],
    ]);
    expect(listed[0]!.policy).toBeInstanceOf(RetryPolicy);
    await s.queue.setRetryPolicy('zeta', null);
    await s.queue.setRetryPolicy('never-set', null);
    expect((await s.queue.retryPolicies()).map(({ type }) => type)).toEqual(['alpha']);
  });

  it.each([
    ['a type that is not a string', 42, new RetryPolicy(2, 0, 0)],
    ['an empty type', '', new RetryPolicy(2, 0, 0)],
    ['a plain object for a policy', 'email', { maxAttempts: 2, baseBackoffMillis: 0, maxBackoffMillis: 0, jitter: 'none' }],
    ['a missing policy', 'email', undefined],
    ['more attempts than a job can have', 'email', new RetryPolicy(2 ** 32, 0, 0)],
  ])('refuses %s with InvalidArgumentError, changing nothing', async (_name, type, policy) => {
    const s = await setup(backend);
    await s.queue.setRetryPolicy('email', new RetryPolicy(2, 0, 0));
    const id = await s.queue.submit('email', 'a');
    await expectNoChange(s.queue, [id], () => s.queue.setRetryPolicy(bad(type), bad(policy)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    expect((await s.queue.retryPolicies()).map(({ type: t, policy: p }) => [t, p.maxAttempts])).toEqual([['email', 2]]);
  });
});
