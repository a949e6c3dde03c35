/**
 * Retry policies per job type on a Redis queue are the queue's, not a
 * client's: every client, whatever its own policy, retries a type's jobs
 * by the type's policy, and one connecting later lists it.
 */
import { afterEach, expect, it } from 'vitest';
import { ManualClock, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0, mustPoll } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

let names = 0;

describeRedis('retry policies per job type across Redis clients', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  const connect = async (name: string, time: ManualClock, policy: RetryPolicy) => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name, policy, time });
    opened.push(queue);
    return queue;
  };

  it("a client of another queue policy retries a type's jobs by the type's policy, and a later client lists it", async () => {
    const name = `retry-policies-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const a = await connect(name, clock, new RetryPolicy(3, 100, 100));
    const b = await connect(name, clock, new RetryPolicy(5, 0, 0));
    await a.setRetryPolicy('email', new RetryPolicy(2, 5_000, 5_000));
    const email = await b.submit('email', 'e', 1);
    const other = await b.submit('other', 'o');
    expect((await a.view(email)).maxAttempts).toBe(2);
    // A job with no attempts of its own or of its type's: each client shows its own policy's, as ever on Redis.
    expect((await b.view(other)).maxAttempts).toBe(5);
    for (const id of [email, other]) {
      const lease = await mustPoll(b, id);
      await b.fail(id, lease.token, 'boom');
    }
    expect(await a.view(email)).toMatchObject({ status: 'PENDING', nextRunAt: T0 + 5_000 });
    expect(await a.view(other)).toMatchObject({ status: 'PENDING', nextRunAt: T0 });

    const late = await connect(name, clock, new RetryPolicy(1, 0, 0));
    expect((await late.retryPolicies()).map(({ type, policy }) => [type, policy.maxAttempts, policy.baseBackoffMillis])).toEqual([['email', 2, 5_000]]);
    await late.setRetryPolicy('email', null);
    expect(await b.retryPolicies()).toEqual([]);
    // Its policy gone, a new job of the type takes the submitting client's attempts, and a failure its backoff.
    expect((await b.view(await b.submit('email', 'after'))).maxAttempts).toBe(5);
  });
});
