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
import {
  BackendUnavailableError, InvalidArgumentError, ManualClock, RedisJobQueue, RetryPolicy, StaleLeaseError, type Lease,
} from '../dist/index.js';
import { T0, pause, thrownBy } from './helpers.js';
import { describeRedis, fileRedis } from './redis-harness.js';
import { describeSentinel, startSentinel, type SentinelSetup } from './redis-sentinel-harness.js';

/** Jobs submitted, and completed, through each master before the run goes on. */
const JOBS_PER_MASTER = 100;
/** How long a wait for a count may take before the test fails: a hang, not a pace. */
const WAIT_MILLIS = 120_000;

async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MILLIS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${WAIT_MILLIS} ms waiting for ${what}`);
    await pause(20);
  }
}

describeSentinel('Failover to a replica promoted by Sentinel, with replicas: 1', () => {
  let setup: SentinelSetup | undefined;
  const queues: RedisJobQueue[] = [];
  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.close()));
    await setup?.stop();
  });

  it('loses no acknowledged submit, lease or complete, and leases no job twice, when the master is SIGKILLed mid-run', { timeout: 600_000 }, async () => {
    setup = await startSentinel();
    // The clock stands still during the run: no lease can expire, so a job leased twice is a lease the failover lost.
    const clock = new ManualClock(T0);
    const options = { redis: setup.target, name: 'failover', policy: new RetryPolicy(3, 0, 0), time: clock, replicas: 1, replicaTimeoutMillis: 10_000 };
    const producer = await RedisJobQueue.connect(options);
    const worker = await RedisJobQueue.connect(options);
    queues.push(producer, worker);

    const acknowledged: string[] = [];
    const leases = new Map<string, Lease>();
    const leasedTwice: string[] = [];
    const completed = new Set<string>();
    /** Completes whose reply was lost (the master died under them): they may or may not have taken effect. */
    const uncertain: Lease[] = [];
    const failed = { submits: 0, polls: 0 };
    let running = true;
    const produce = async () => {
      for (let i = 0; running; i++) {
        try {
          acknowledged.push(await producer.submit('t', String(i)));
        } catch (error) {
          if (!(error instanceof BackendUnavailableError)) throw error;
          failed.submits++;
          await pause(20); // The master is down: the client finds the new one in the background.
        }
      }
    };
    const work = async () => {
      while (running) {
        let lease: Lease | undefined;
        try {
          lease = await worker.poll('w', 60_000);
        } catch (error) {
          if (!(error instanceof BackendUnavailableError)) throw error;
          failed.polls++;
          await pause(20);
          continue;
        }
        if (lease === undefined) {
          await pause(5);
          continue;
        }
        if (leases.has(lease.jobId)) leasedTwice.push(lease.jobId);
        leases.set(lease.jobId, lease);
        try {
          await worker.complete(lease.jobId, lease.token);
          completed.add(lease.jobId);
        } catch (error) {
          if (!(error instanceof BackendUnavailableError)) throw error;
          uncertain.push(lease);
        }
      }
    };
    const loops = Promise.all([produce(), work()]);
    try {
      await until(`${JOBS_PER_MASTER} jobs through the first master`, () => acknowledged.length >= JOBS_PER_MASTER && completed.size >= JOBS_PER_MASTER / 2);
      const first = await setup.masterPort();
      await setup.master.kill();
      await setup.failedOverFrom(first);
      const [submittedBefore, completedBefore] = [acknowledged.length, completed.size];
      await until(`${JOBS_PER_MASTER} jobs through the promoted master`, () =>
        acknowledged.length >= submittedBefore + JOBS_PER_MASTER && completed.size >= completedBefore + JOBS_PER_MASTER / 2);
    } finally {
      running = false;
      await loops;
    }

    expect(leasedTwice).toEqual([]);
    // Every acknowledged write is on the promoted master: the submit, the lease, the complete.
    for (const id of acknowledged) {
      const view = await worker.view(id);
      const lease = leases.get(id);
      if (completed.has(id)) expect(view, id).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      else if (lease !== undefined && !uncertain.includes(lease)) expect(view, id).toMatchObject({ status: 'RUNNING', attempts: 1, token: lease.token });
      else expect(['PENDING', 'RUNNING', 'SUCCEEDED'], id).toContain(view.status);
    }
    // A complete whose reply was lost is done again: it ran (StaleLeaseError, SUCCEEDED) or runs now.
    for (const lease of uncertain) {
      await worker.complete(lease.jobId, lease.token).catch((error: unknown) => expect(error).toBeInstanceOf(StaleLeaseError));
      expect((await worker.view(lease.jobId)).status).toBe('SUCCEEDED');
    }
    // Leases whose poll reply was lost expire; then every job runs to the end.
    clock.advance(120_000);
    for (let lease = await worker.poll('w', 60_000); lease !== undefined; lease = await worker.poll('w', 60_000)) {
      await worker.complete(lease.jobId, lease.token);
    }
    const views = await Promise.all(acknowledged.map((id) => worker.view(id)));
    expect(views.filter((view) => view.status !== 'SUCCEEDED')).toEqual([]);
    console.info(`failover: ${acknowledged.length} submits acknowledged (${failed.submits} failed), ${completed.size} completes, ` +
      `${uncertain.length} completes and ${failed.polls} polls lost with the master, 0 jobs lost, 0 leased twice`);
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
