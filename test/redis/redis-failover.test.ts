/**
 * Failover without loss: with `replicas: 1` every call that changes the
 * queue resolves only once a replica has it (WAIT), so when the master dies
 * and Sentinel promotes a replica (of two: the other then follows it), the client follows Sentinel to the new
 * master and finds there every job whose submit resolved, every lease a poll
 * returned and every complete that resolved. The fault is driven by counts:
 * the master is SIGKILLed once enough jobs went through it, and the run
 * goes on until enough went through the promoted one.
 */
import { afterAll, afterEach, expect, it } from 'vitest';
import { BackendUnavailableError, InvalidArgumentError, ManualClock, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { FailoverWorkload, until } from './failover-workload.js';
import { T0, thrownBy } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';
import { describeSentinel, startSentinel, type SentinelSetup } from './redis-sentinel-harness.js';

/** Jobs submitted, and completed, through each master before the run goes on. */
const JOBS_PER_MASTER = 100;

describeSentinel('Failover to a replica promoted by Sentinel, with replicas: 1', () => {
  let setup: SentinelSetup | undefined;
  const queues: RedisJobQueue[] = [];
  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.close()));
    await setup?.stop();
  });

  it('loses no acknowledged submit, lease or complete, and leases no job twice, when the master is SIGKILLed mid-run', { timeout: 600_000 }, async () => {
    setup = await startSentinel();
    // The clock stands still during the run (see failover-workload.ts).
    const clock = new ManualClock(T0);
    const options = { redis: setup.target, name: 'failover', policy: new RetryPolicy(3, 0, 0), time: clock, replicas: 1, replicaTimeoutMillis: 10_000 };
    const producer = await RedisJobQueue.connect(options);
    const worker = await RedisJobQueue.connect(options);
    queues.push(producer, worker);
    const run = new FailoverWorkload(producer, worker);
    try {
      await until(`${JOBS_PER_MASTER} jobs through the first master`, () => run.acknowledged.length >= JOBS_PER_MASTER && run.completed.size >= JOBS_PER_MASTER / 2, run.failure);
      const first = await setup.masterPort();
      await setup.master.kill();
      await setup.failedOverFrom(first);
      const [submittedBefore, completedBefore] = [run.acknowledged.length, run.completed.size];
      await until(`${JOBS_PER_MASTER} jobs through the promoted master`, () =>
        run.acknowledged.length >= submittedBefore + JOBS_PER_MASTER && run.completed.size >= completedBefore + JOBS_PER_MASTER / 2, run.failure);
    } finally {
      await run.stop();
    }

    // Every acknowledged write is on the promoted master: the submit, the lease, the complete.
    await run.expectNothingLost(worker, clock);
    console.info(`failover: ${run.acknowledged.length} submits acknowledged (${run.failed.submits} failed), ${run.completed.size} completes, ` +
      `${run.uncertain.length} completes and ${run.failed.polls} polls lost with the master, 0 jobs lost, 0 leased twice`);
  });
});

describeRedis('The replicas option', () => {
  const opened: RedisJobQueue[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });

  it('rejects a write no replica confirmed in time with BackendUnavailableError saying it ran on the master; reads do not wait', async () => {
    const { url } = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: url, name: `alone-${process.pid}`, policy: new RetryPolicy(3, 0, 0), replicas: 1, replicaTimeoutMillis: 50 });
    opened.push(queue);
    const error = await thrownBy(() => queue.submit('t', 'p'));
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as Error).message).toBe('The call ran on the Redis master, but only 0 of 1 replicas had it within 50 ms: a failover now may lose it');
    expect(await queue.stats()).toMatchObject({ pending: 1 });
  });

  it.each([['replicas', -1], ['replicas', 1.5], ['replicas', '1'], ['replicaTimeoutMillis', 0], ['replicaTimeoutMillis', Infinity]])(
    'refuses %s = %s with InvalidArgumentError', async (option, value) => {
      const { url } = await fileRedis();
      const connecting = RedisJobQueue.connect({ redis: url, name: 'never', policy: new RetryPolicy(3, 0, 0), [option]: value });
      await expect(connecting).rejects.toBeInstanceOf(InvalidArgumentError);
    },
  );
});
