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
import { ManualClock, PartitionedRedisQueue, RetryPolicy } from '../../dist/index.js';
import { FailoverWorkload, until } from './failover-workload.js';
import { T0 } from '../support/helpers.js';
import { describeRedis } from '../support/redis-harness.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster-harness.js';

const NAME = 'failover';
const PARTITIONS = 3;
/** The partition whose master is killed: its jobs are J1, J4, J7... (partition p numbers p + 1, p + 1 + PARTITIONS, ...). */
const VICTIM_PARTITION = 0;
/** Jobs of the victim partition submitted, and completed, through each of its masters before the run goes on. */
const JOBS_PER_MASTER = 60;
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

    // The clock stands still during the run (see failover-workload.ts).
    const clock = new ManualClock(T0);
    const options = {
      redis: { cluster: cluster.nodes }, name: NAME, partitions: PARTITIONS, policy: new RetryPolicy(3, 0, 0), time: clock, replicas: 1, replicaTimeoutMillis: 10_000,
    };
    const producer = await PartitionedRedisQueue.connect(options);
    const worker = await PartitionedRedisQueue.connect(options);
    queues.push(producer, worker);

    const run = new FailoverWorkload(producer, worker);
    const victimCount = (ids: Iterable<string>) => [...ids].filter(inVictim).length;
    let promotedPort: number;
    try {
      await until(`${JOBS_PER_MASTER} jobs of partition ${VICTIM_PARTITION} through its first master`, () =>
        victimCount(run.acknowledged) >= JOBS_PER_MASTER && victimCount(run.completed) >= JOBS_PER_MASTER / 2, run.failure);
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
      const [submittedBefore, completedBefore] = [victimCount(run.acknowledged), victimCount(run.completed)];
      await until(`${JOBS_PER_MASTER} jobs of partition ${VICTIM_PARTITION} through the promoted master`, () =>
        victimCount(run.acknowledged) >= submittedBefore + JOBS_PER_MASTER && victimCount(run.completed) >= completedBefore + JOBS_PER_MASTER / 2, run.failure);
    } finally {
      await run.stop();
    }

    expect(promotedPort).not.toBe(victimPort);
    // The client followed the slot: the last job of the victim partition lives on the promoted master.
    const last = run.acknowledged.filter(inVictim).at(-1)!;
    expect(await cli(promotedPort, 'EXISTS', `leasehold:${slotTag}:job:${last.slice(1)}`)).toBe('1\n');
    // Every acknowledged write is on the masters now serving the slots: the submit, the lease, the complete.
    await run.expectNothingLost(worker, clock);
    console.info(`cluster failover: ${run.acknowledged.length} submits acknowledged (${victimCount(run.acknowledged)} to the killed master's slot, ${run.failed.submits} failed), ` +
      `${run.completed.size} completes, ${run.uncertain.length} completes and ${run.failed.polls} polls lost or unconfirmed, 0 jobs lost, 0 leased twice`);
  });
});
