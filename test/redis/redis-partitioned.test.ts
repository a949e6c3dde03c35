/**
 * A queue partitioned over several hash tags, on a real 3-master cluster:
 * producers spread jobs over the partitions (so over the masters), claimers
 * visit them, ids stay unique and route each call to its job's partition,
 * and every job is claimed once.
 */
import { beforeEach, expect, it } from 'vitest';
import {
  IllegalStateError, InvalidArgumentError, JobNotFoundError, ManualClock, PartitionedRedisQueue, RetryPolicy, StaleLeaseError, type Lease,
} from '../../dist/index.js';
import { T0 } from '../support/helpers.js';
import { useRedisCluster, type RedisCluster } from '../support/redis-cluster-harness.js';
import { describeRedis } from '../support/redis-harness.js';

describeRedis('PartitionedRedisQueue on a Redis Cluster of 3 masters', () => {
  const { cluster: clusterOf, track } = useRedisCluster();
  let cluster: RedisCluster;
  beforeEach(() => {
    cluster = clusterOf();
  });
  const open = async (name: string, partitions = 3, clock = new ManualClock(T0)) =>
    track(await PartitionedRedisQueue.connect({ redis: { cluster: cluster.nodes }, name, partitions, policy: new RetryPolicy(3, 0, 0), time: clock }));

  it('spreads submits over the partitions, one per master here, and two claimers visiting them claim every job once', async () => {
    // A name whose 3 partitions land on 3 different masters.
    let name = '';
    for (let i = 0; name === ''; i++) {
      const ports = await Promise.all([0, 1, 2].map((p) => cluster.masterOf(`{spread-${i}#${p}}`)));
      if (new Set(ports).size === 3) name = `spread-${i}`;
    }
    const producer = await open(name);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await producer.submit('t', String(i)));
    expect(new Set(ids).size).toBe(30);
    for (const p of [0, 1, 2]) {
      const pending = Number(await cluster.cli(await cluster.masterOf(`{${name}#${p}}`), 'ZCARD', `leasehold:{${name}#${p}}:pending`));
      expect(pending, `partition ${p}`).toBe(10);
    }
    const claimers = [await open(name), await open(name)];
    const claims = await Promise.all(claimers.map(async (queue, c) => {
      const mine: Lease[] = [];
      for (let leases = await queue.pollMany(`w${c}`, 1000, 4); leases.length > 0; ) {
        mine.push(...leases);
        const outcome = await queue.completeManyAndPoll(leases.map(({ jobId, token }) => ({ jobId, token })), `w${c}`, 1000, 4);
        expect(outcome.refused).toEqual([]);
        leases = outcome.leases;
      }
      return mine;
    }));
    const all = claims.flat();
    expect(all.map((lease) => lease.jobId).sort()).toEqual([...ids].sort());
    expect(all.every((lease) => lease.attempt === 1)).toBe(true);
    expect(await producer.stats()).toMatchObject({ succeeded: 30, pending: 0, running: 0 });
  });

  it('routes every call to its job\'s partition, refuses ids no partition issued, and keeps priority order within a partition', async () => {
    const clock = new ManualClock(T0);
    const queue = await open('route', 3, clock);
    // One submitMany is all or none, so one partition: its jobs come out by priority.
    const [low, high] = await queue.submitMany([{ type: 't', payload: 'low' }, { type: 't', payload: 'high', priority: 9 }]);
    const first = (await queue.poll('w', 1000))!;
    expect(first).toMatchObject({ jobId: high, payload: 'high' });
    await expect(queue.complete(first.jobId, first.token + 1)).rejects.toBeInstanceOf(StaleLeaseError);
    expect(await queue.extend(first.jobId, first.token, 2000)).toBe(T0 + 2000);
    await queue.fail(first.jobId, first.token, 'boom', { permanent: true });
    expect((await queue.deadLetters()).map((view) => view.id)).toEqual([high]);
    await queue.retryDead(high!);
    await queue.cancel(low!);
    expect(await queue.view(low!)).toMatchObject({ status: 'CANCELLED', payload: 'low' });
    // Their partition numbers its jobs 3 apart: the next of its numbers, and the two between (the
    // other partitions', which issued none), are no job's yet.
    expect(Number(high!.slice(1)) - Number(low!.slice(1))).toBe(3);
    const next = Number(high!.slice(1)) + 3;
    for (const unissued of [next, next + 1, next + 2, 999]) await expect(queue.view(`J${unissued}`)).rejects.toBeInstanceOf(JobNotFoundError);
    expect(await queue.stats()).toMatchObject({ pending: 1, cancelled: 1, dead: 0 });
  });

  it('removes a job in its own partition, refuses a RUNNING one and ids no partition issued, and leaves the other partitions alone', async () => {
    const queue = await open('remove', 3);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await queue.submit('t', String(i)));
    const lease = (await queue.poll('w', 60_000))!;
    await expect(queue.remove(lease.jobId)).rejects.toBeInstanceOf(IllegalStateError);
    const pending = ids.filter((id) => id !== lease.jobId);
    // Three PENDING jobs, wherever the submits put them; every other job stays.
    const removed = pending.slice(0, 3);
    for (const id of removed) await queue.remove(id);
    for (const id of removed) await expect(queue.view(id)).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(queue.remove(removed[0]!)).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(queue.remove('J999')).rejects.toBeInstanceOf(JobNotFoundError);
    expect(await queue.stats()).toMatchObject({ pending: 2, running: 1 });
    const left = new Set<string>();
    for (let next = await queue.poll('w', 60_000); next !== undefined; next = await queue.poll('w', 60_000)) left.add(next.jobId);
    expect([...left].sort()).toEqual(pending.slice(3).sort());
  });

  it('shares through a handle that survives structuredClone, and refuses a bad partition count', async () => {
    const queue = await open('shared', 2);
    const id = await queue.submit('t', 'p');
    const copy = await PartitionedRedisQueue.attach(structuredClone(queue.share()));
    track(copy);
    expect(copy.partitions).toBe(2);
    expect((await copy.poll('w', 1000))!.jobId).toBe(id);
    for (const partitions of [0, 65, 1.5]) {
      await expect(open('bad', partitions)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    const misspelt = PartitionedRedisQueue.connect({ redis: { cluster: cluster.nodes }, name: 'bad', partitions: 2, policy: new RetryPolicy(3, 0, 0), capacty: 8 } as never);
    await expect(misspelt).rejects.toThrow(/no keys but redis, .*, partitions, got `capacty`/);
  });
});
