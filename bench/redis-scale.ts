/**
 * Suite "redis-scale": one queue partitioned over 1, 2 and 3 masters
 * (PartitionedRedisQueue, one partition per master: a name whose partitions
 * land on that many distinct masters) of a private 3-master Redis Cluster
 * this suite starts, AOF fsynced once a second (the masters' CPU is what
 * partitioning spreads; `always` would measure the disk). JOBS jobs are
 * queued first, untimed; then LOOPS_PER_MASTER batched claim loops per master
 * (each its own client, BATCH jobs per completeManyAndPoll) drain them, timed.
 * Counts checked after every run: every job succeeded at its first attempt.
 * All masters run on this one machine, so the rate can only grow with the
 * masters as far as its cores allow.
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { PartitionedRedisQueue, RetryPolicy, type Lease } from '../dist/index.js';
import { QUICK } from './conditions.js';
import { redisClusterMissing, startRedisCluster, type RedisCluster } from './redis-cluster.js';
import { type Row, type Suite, formatRate, formatRatio, median } from './report.js';

const JOBS = QUICK ? 2_000 : 20_000;
const MASTERS = [1, 2, 3] as const;
const LOOPS_PER_MASTER = 4;
const BATCH = 8;
const RUNS = 3;
const LEASE_MILLIS = 30_000;

/** A queue name whose partitions `name#0`, `name#1`, ... land on as many different masters. */
async function spreadName(cluster: RedisCluster, partitions: number, run: number): Promise<string> {
  for (let i = 0; ; i++) {
    const name = `scale-${partitions}-${run}-${i}`;
    const ports = await Promise.all(Array.from({ length: partitions }, (_, p) => cluster.masterOf(`{${name}#${p}}`)));
    if (new Set(ports).size === partitions) return name;
  }
}

/** One timed drain of JOBS jobs; returns jobs/s. */
async function drainOnce(cluster: RedisCluster, masters: number, run: number): Promise<number> {
  const name = await spreadName(cluster, masters, run);
  const connect = () => PartitionedRedisQueue.connect({
    redis: { cluster: cluster.nodes }, name, partitions: masters, policy: new RetryPolicy(3, 100, 1_000), capacity: JOBS,
  });
  const producer = await connect();
  const loops = await Promise.all(Array.from({ length: LOOPS_PER_MASTER * masters }, connect));
  try {
    for (let added = 0; added < JOBS; added += 100) await producer.submitMany(Array.from({ length: 100 }, () => ({ type: 'noop', payload: 'x' })));
    const leased = new Set<string>();
    const claim = (lease: Lease) => {
      if (leased.has(lease.jobId) || lease.attempt !== 1) throw new Error(`leased ${lease.jobId} again (attempt ${lease.attempt})`);
      leased.add(lease.jobId);
    };
    const started = performance.now();
    await Promise.all(loops.map(async (queue, i) => {
      for (let leases = await queue.pollMany(`w${i}`, LEASE_MILLIS, BATCH); leases.length > 0; ) {
        leases.forEach(claim);
        const outcome = await queue.completeManyAndPoll(leases.map(({ jobId, token }) => ({ jobId, token })), `w${i}`, LEASE_MILLIS, BATCH);
        if (outcome.refused.length > 0) throw new Error(`${outcome.refused.length} completes of live leases refused`);
        leases = outcome.leases;
      }
    }));
    const millis = performance.now() - started;
    const stats = await producer.stats();
    if (leased.size !== JOBS || stats.succeeded !== JOBS || stats.pending !== 0 || stats.running !== 0) {
      throw new Error(`after the run: ${leased.size} leased, stats ${JSON.stringify(stats)}; expected ${JOBS} succeeded and nothing else`);
    }
    return (JOBS / millis) * 1000;
  } finally {
    await Promise.all([producer, ...loops].map((queue) => queue.close()));
  }
}

export const redisScale: Suite = {
  id: 'redis-scale',
  title: `One queue partitioned over 1, 2 and 3 Redis Cluster masters: ${JOBS.toLocaleString('en-US')} no-op jobs drained`,
  config: {
    'redis-scale: cluster': 'a private 3-master Redis Cluster, no replicas, loopback, appendonly yes, appendfsync everysec, no RDB snapshots',
    'redis-scale: queue': 'PartitionedRedisQueue, one partition per master (a name whose partitions land on distinct masters)',
    'redis-scale: claimers': `${LOOPS_PER_MASTER} loops per master, each its own client, ${BATCH} jobs per completeManyAndPoll`,
    'redis-scale: runs': `${RUNS} rounds of one timed run per master count, median`,
  },
  async run() {
    const missing = redisClusterMissing();
    if (missing !== null) return { tables: [], bars: [], unit: 'jobs/s', ratios: {}, notes: [`SKIPPED: ${missing}`] };
    const rates = new Map<number, number[]>(MASTERS.map((masters) => [masters, []]));
    const cluster = await startRedisCluster(3, { appendfsync: 'everysec' });
    try {
      // Rounds of 1, 2, 3 masters each, so that a noisy spell of the machine falls on all.
      for (let run = 0; run < RUNS; run++) {
        for (const masters of MASTERS) rates.get(masters)!.push(await drainOnce(cluster, masters, run));
      }
    } finally {
      await cluster.stop();
    }
    const base = median(rates.get(1)!);
    const rows: Row[] = MASTERS.map((masters) => ({
      masters,
      ...Object.fromEntries(rates.get(masters)!.map((rate, i) => [`run ${i + 1} jobs/s`, formatRate(rate)])),
      'jobs/s (median)': formatRate(median(rates.get(masters)!)),
      'vs 1 master': formatRatio(median(rates.get(masters)!) / base),
    }));
    return {
      tables: [{ title: `jobs/s = ${JOBS.toLocaleString('en-US')} jobs / timed drain; median of ${RUNS} runs`, rows }],
      bars: MASTERS.map((masters) => ({ label: `${masters} master${masters > 1 ? 's' : ''}`, value: median(rates.get(masters)!), baseline: masters === 1 })),
      unit: 'jobs/s',
      ratios: Object.fromEntries(MASTERS.slice(1).map((masters) => [`${masters} masters / 1 master`, median(rates.get(masters)!) / base])),
      notes: [`every master on this one machine (${cpus().length} CPUs): the masters share its cores with the claimers`],
    };
  },
};
