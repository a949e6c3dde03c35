/**
 * Failover without loss on a Redis Cluster: 3 masters and a replica of each
 * (`--cluster-replicas 1`), a PartitionedRedisQueue of 3 partitions over
 * them, `replicas: 1` (every call that changes a partition resolves only once
 * the replica of that partition's master has it: WAIT). The master of
 * partition 0 is SIGKILLed once enough of its jobs went through it; the
 * Cluster promotes its replica (polled in CLUSTER NODES and CLUSTER INFO),
 * the old master comes back as the new one's replica (so that writes find a
 * replica to wait for), and the run goes on until enough jobs went through the
 * promoted master. Every job whose submit resolved is then there, every lease
 * a poll returned and every complete that resolved, no job was leased twice,
 * and the client followed the slot to its new master. The fault is driven by
 * counts, the waits by states, each bounded by a timeout that says what it
 * waited for.
 */
import { afterAll, expect, it } from 'vitest';
import { BackendUnavailableError, ManualClock, PartitionedRedisQueue, RetryPolicy, StaleLeaseError, type Lease } from '../dist/index.js';
import { T0, pause } from './helpers.js';
import { describeRedis } from './redis-harness.js';
import { startRedisCluster, type RedisCluster } from './redis-cluster-harness.js';

const NAME = 'failover';
const PARTITIONS = 3;
/** The partition whose master is killed: its jobs are J1, J4, J7... (partition p numbers p + 1, p + 1 + PARTITIONS, ...). */
const VICTIM_PARTITION = 0;
/** Jobs of the victim partition submitted, and completed, through each of its masters before the run goes on. */
const JOBS_PER_MASTER = 60;
/** How long a wait for a count or a state may take before the test fails: a hang, not a pace. */
const WAIT_MILLIS = 120_000;

/** Polls `condition` until it holds (an error it throws counts as not yet); fails after WAIT_MILLIS, or at once if the run's loops failed. */
async function until(what: string, condition: () => boolean | Promise<boolean>, failure: () => unknown = () => undefined): Promise<void> {
  const deadline = Date.now() + WAIT_MILLIS;
  while (!(await Promise.resolve().then(condition).catch(() => false))) {
    if (failure() !== undefined) throw failure();
    if (Date.now() > deadline) throw new Error(`timed out after ${WAIT_MILLIS} ms waiting for ${what}`);
    await pause(50);
  }
}

const inVictim = (jobId: string) => (Number(jobId.slice(1)) - 1) % PARTITIONS === VICTIM_PARTITION;

describeRedis('Failover of a Redis Cluster master to its replica, with replicas: 1', () => {
  let cluster: RedisCluster | undefined;
  const queues: PartitionedRedisQueue[] = [];
  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.close()));
    await cluster?.stop();
  });

  it('loses no acknowledged submit, lease or complete, leases no job twice, and follows the slot to the promoted replica', { timeout: 600_000 }, async () => {
    cluster = await startRedisCluster(3, { replicasPerMaster: 1 });
    const { cli } = cluster;
    const slotTag = `{${NAME}#${VICTIM_PARTITION}}`;
    const victimPort = await cluster.masterOf(slotTag);
    const victim = cluster.servers.find((server) => server.port === victimPort)!;
    const survivor = cluster.servers.find((server) => server !== victim)!;

    // The clock stands still during the run: no lease can expire, so a job leased twice is a lease the failover lost.
    const clock = new ManualClock(T0);
    const options = {
      redis: { cluster: cluster.nodes }, name: NAME, partitions: PARTITIONS, policy: new RetryPolicy(3, 0, 0), time: clock, replicas: 1, replicaTimeoutMillis: 10_000,
    };
    const producer = await PartitionedRedisQueue.connect(options);
    const worker = await PartitionedRedisQueue.connect(options);
    queues.push(producer, worker);

    const acknowledged: string[] = [];
    const leases = new Map<string, Lease>();
    const leasedTwice: string[] = [];
    const completed = new Set<string>();
    /** Completes whose reply was lost or not confirmed by a replica: they may or may not have taken effect. */
    const uncertain: Lease[] = [];
    const failed = { submits: 0, polls: 0 };
    const victimCount = (ids: Iterable<string>) => [...ids].filter(inVictim).length;
    let running = true;
    const produce = async () => {
      for (let i = 0; running; i++) {
        try {
          acknowledged.push(await producer.submit('t', String(i)));
        } catch (error) {
          if (!(error instanceof BackendUnavailableError)) throw error;
          failed.submits++;
          await pause(20); // No master for the slot yet: the client finds the promoted one in the background.
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
    // A loop that fails (an error other than BackendUnavailableError) ends the waits at once, with its error.
    let loopFailure: unknown;
    loops.catch((error: unknown) => (loopFailure = error));
    const failure = () => loopFailure;
    let promotedPort: number;
    try {
      await until(`${JOBS_PER_MASTER} jobs of partition ${VICTIM_PARTITION} through its first master`, () =>
        victimCount(acknowledged) >= JOBS_PER_MASTER && victimCount(completed) >= JOBS_PER_MASTER / 2, failure);
      await victim.kill();
      // The Cluster's own failover: a survivor reports another master for the slot, and every survivor says ok.
      await until(`the replica of ${victimPort} to be promoted for ${slotTag}`, async () => (await cluster!.masterOf(slotTag, survivor.port)) !== victimPort);
      promotedPort = await cluster.masterOf(slotTag, survivor.port);
      const survivors = cluster.servers.filter((server) => server !== victim);
      await until('every surviving node to report cluster_state:ok', async () =>
        (await Promise.all(survivors.map((server) => cli(server.port, 'CLUSTER', 'INFO')))).every((info) => info.includes('cluster_state:ok')));
      // The old master comes back as the promoted one's replica: writes to the slot have a replica to wait for again.
      await victim.restart();
      await until(`${victimPort} to come back as a replica of ${promotedPort} in sync`, async () => {
        const replication = await cli(victimPort, 'INFO', 'replication');
        return replication.includes('role:slave') && replication.includes(`master_port:${promotedPort}`) && replication.includes('master_link_status:up');
      });
      const [submittedBefore, completedBefore] = [victimCount(acknowledged), victimCount(completed)];
      await until(`${JOBS_PER_MASTER} jobs of partition ${VICTIM_PARTITION} through the promoted master`, () =>
        victimCount(acknowledged) >= submittedBefore + JOBS_PER_MASTER && victimCount(completed) >= completedBefore + JOBS_PER_MASTER / 2, failure);
    } finally {
      running = false;
      await loops;
    }

    expect(promotedPort).not.toBe(victimPort);
    expect(leasedTwice).toEqual([]);
    // Every acknowledged write is on the masters now serving the slots: the submit, the lease, the complete.
    for (const id of acknowledged) {
      const view = await worker.view(id);
      const lease = leases.get(id);
      if (completed.has(id)) expect(view, id).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      else if (lease !== undefined && !uncertain.includes(lease)) expect(view, id).toMatchObject({ status: 'RUNNING', attempts: 1, token: lease.token });
      else expect(['PENDING', 'RUNNING', 'SUCCEEDED'], id).toContain(view.status);
    }
    // The client followed the slot: the last job of the victim partition lives on the promoted master.
    const last = acknowledged.filter(inVictim).at(-1)!;
    expect(await cli(promotedPort, 'EXISTS', `leasehold:${slotTag}:job:${last.slice(1)}`)).toBe('1\n');
    // A complete whose outcome is unknown is done again: it ran (StaleLeaseError, SUCCEEDED) or runs now.
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
    console.info(`cluster failover: ${acknowledged.length} submits acknowledged (${victimCount(acknowledged)} to the killed master's slot, ${failed.submits} failed), ` +
      `${completed.size} completes, ${uncertain.length} completes and ${failed.polls} polls lost or unconfirmed, 0 jobs lost, 0 leased twice`);
  });
});
