/**
 * Pub/sub keeps nothing for a connection that is down: a finish or new work
 * published while a client's subscribed connection is being reconnected never
 * reaches it. Once it is back and subscribed again, every finished() and
 * waitForWork() of that client looks again instead of sleeping until its timeout.
 */
import { Redis } from 'ioredis';
import { expect, it, onTestFinished } from 'vitest';
import { RedisJobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { waitUntil } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

/** Far beyond the few hundred ms a reconnect takes: a wait that ends by its timeout fails the test. */
const WAIT_MILLIS = 8_000;
let names = 0;

describeRedis('RedisJobQueue: waits across a dropped subscription', () => {
  async function setup() {
    const { url } = await fileRedis();
    const name = `resubscribe-${process.pid}-${++names}`;
    const connect = () => RedisJobQueue.connect({ redis: url, name, policy: new RetryPolicy(1, 0, 0), time: systemClock });
    const [waiter, worker] = await Promise.all([connect(), connect()]);
    const admin = new Redis(url, { maxRetriesPerRequest: 0 });
    onTestFinished(async () => {
      admin.disconnect();
      await Promise.all([waiter.close(), worker.close()]);
    });
    const subscribers = async (channel: string) => ((await admin.pubsub('NUMSUB', `leasehold:{${name}}:${channel}`)) as [string, number])[1];
    /** Drops every subscribed connection (only the waiter has one) and waits until it is back, subscribed to `channel`. */
    const dropSubscriptions = async (channel: string, meanwhile: () => Promise<unknown>) => {
      await waitUntil('the waiter to subscribe', async () => (await subscribers(channel)) === 1, 5_000);
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      // Published while the waiter's connection is down (ioredis waits 50 ms before its first reconnect).
      await meanwhile();
      expect(await subscribers(channel)).toBe(0);
    };
    return { waiter, worker, dropSubscriptions };
  }

  it('settles a finished() whose job finished while its subscription was down', async () => {
    const { waiter, worker, dropSubscriptions } = await setup();
    const jobId = await worker.submit('t', 'x');
    const started = Date.now();
    const finished = waiter.finished(jobId, { timeoutMillis: WAIT_MILLIS });
    await dropSubscriptions('finishes', async () => {
      const lease = (await worker.poll('w', 60_000))!;
      await worker.complete(lease.jobId, lease.token, { done: true });
    });
    expect(await finished).toEqual({ done: true });
    expect(Date.now() - started).toBeLessThan(WAIT_MILLIS / 2);
  });

  it('wakes a waitForWork() whose new work was announced while its subscription was down', async () => {
    const { waiter, worker, dropSubscriptions } = await setup();
    expect(await waiter.poll('w', 60_000)).toBeUndefined();
    const started = Date.now();
    const woken = waiter.waitForWork(WAIT_MILLIS);
    await dropSubscriptions('signal', () => worker.submit('t', 'new'));
    expect(await woken).toBe(true);
    expect(Date.now() - started).toBeLessThan(WAIT_MILLIS / 2);
    expect((await waiter.poll('w', 60_000))?.payload).toBe('new');
  });
});
