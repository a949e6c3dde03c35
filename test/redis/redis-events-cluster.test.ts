/**
 * Events of a partitioned queue on a real 3-master Redis Cluster: each partition's stream lives
 * on its own master, read on a connection of its own, and a subscriber hears every partition's
 * moves once, in each job's order. Waits are counts.
 */
import { beforeEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RetryPolicy } from '../../dist/index.js';
import { T0, waitUntil } from '../support/helpers.js';
import { useRedisCluster, type RedisCluster } from '../support/redis-cluster-harness.js';
import { describeRedis } from '../support/redis-harness.js';

describeRedis('events of a PartitionedRedisQueue on a Redis Cluster of 3 masters', () => {
  const { cluster: clusterOf, track } = useRedisCluster();
  let cluster: RedisCluster;
  beforeEach(() => {
    cluster = clusterOf();
  });

  it('hears the moves of partitions on three masters, each job once and in order', async () => {
    // A name whose 3 partitions land on 3 different masters.
    let name = '';
    for (let i = 0; name === ''; i++) {
      const ports = await Promise.all([0, 1, 2].map((p) => cluster.masterOf(`{events-${i}#${p}}`)));
      if (new Set(ports).size === 3) name = `events-${i}`;
    }
    const queue = track(await PartitionedRedisQueue.connect({
      redis: { cluster: cluster.nodes }, name, partitions: 3, policy: new RetryPolicy(2, 0, 0), time: new ManualClock(T0),
    }));
    const events = track(await queue.events());
    const byJob = new Map<string, string[]>();
    for (const kind of ['completed', 'failed', 'retrying', 'dead'] as const) {
      events.on(kind, (event) => byJob.set(event.jobId, [...(byJob.get(event.jobId) ?? []), `${kind}:${event.attempt}`]));
    }
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await queue.submit('t', String(i)));
    for (let lease = await queue.poll('w', 1_000); lease !== undefined; lease = await queue.poll('w', 1_000)) {
      if (Number(lease.payload) % 2 === 0) await queue.complete(lease.jobId, lease.token);
      else await queue.fail(lease.jobId, lease.token, 'boom');
    }
    await waitUntil('every job finished in the events', () => ids.every((id) => ['completed:1', 'dead:2'].includes(byJob.get(id)?.at(-1) ?? '')), 30_000);
    ids.forEach((id, i) => expect(byJob.get(id), id).toEqual(i % 2 === 0 ? ['completed:1'] : ['failed:1', 'retrying:1', 'failed:2', 'dead:2']));
    expect(events.position.split(',')).toHaveLength(3);
  });
});
