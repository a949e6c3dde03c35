/**
 * RedisJobQueue on a real 3-master Redis Cluster (the conformance suite runs
 * on one too, as backend `redis-cluster`): queues of different names land on
 * different masters, each queue's keys in its own slot; the calls that name a
 * job declare its hash in KEYS; waitForWork is woken across nodes.
 */
import { Redis } from 'ioredis';
import { beforeEach, expect, it } from 'vitest';
import { ManualClock, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { T0, withTimeout } from '../support/helpers.js';
import { useRedisCluster, type RedisCluster } from '../support/redis-cluster-harness.js';
import { describeRedis } from '../support/redis-harness.js';

describeRedis('RedisJobQueue on a Redis Cluster of 3 masters', () => {
  const { cluster: clusterOf, track } = useRedisCluster();
  let cluster: RedisCluster;
  beforeEach(() => {
    cluster = clusterOf();
  });
  const open = async (name: string, clock = new ManualClock(T0)) =>
    track(await RedisJobQueue.connect({ redis: { cluster: cluster.nodes }, name, policy: new RetryPolicy(3, 0, 0), time: clock }));
  const slotOf = async (key: string) => Number(await cluster.cli(cluster.nodes[0]!.port, 'CLUSTER', 'KEYSLOT', key));

  it('puts queues of different names on different masters, every key of a queue in its own slot on its master', async () => {
    // One queue name per master, found by the slot of its hash tag.
    const names = new Map<number, string>();
    for (let i = 0; names.size < 3; i++) {
      const name = `spread-${i}`;
      const port = await cluster.masterOf(`{${name}}`);
      if (!names.has(port)) names.set(port, name);
    }
    for (const [port, name] of names) {
      const queue = await open(name);
      await queue.submitMany([{ type: 't', payload: 'a' }, { type: 't', payload: 'b' }, { type: 't', payload: 'c' }]);
      const first = (await queue.poll('w', 1000))!;
      await queue.completeAndPoll(first.jobId, first.token, 'w', 1000);
      const cancelled = await queue.submit('t', 'd');
      await queue.cancel(cancelled);
      expect(await queue.stats()).toMatchObject({ pending: 1, running: 1, succeeded: 1, cancelled: 1 });

      const keys = (await cluster.cli(port, '--scan', '--pattern', `leasehold:{${name}}:*`)).trim().split('\n');
      expect(keys).toEqual(expect.arrayContaining([`leasehold:{${name}}:job:1`, `leasehold:{${name}}:leases`, `leasehold:{${name}}:pending`]));
      const slot = await slotOf(`{${name}}`);
      for (const key of keys) expect(await slotOf(key)).toBe(slot);
      // All of them on this master, and only there.
      expect(Number(await cluster.cli(port, 'CLUSTER', 'COUNTKEYSINSLOT', String(slot)))).toBe(keys.length);
      for (const other of cluster.servers.filter((server) => server.port !== port)) {
        expect((await cluster.cli(other.port, '--scan', '--pattern', `leasehold:{${name}}:*`)).trim()).toBe('');
      }
    }
  });

  it('declares in KEYS the hash of the job a call names (complete, fail, extend, view, cancel, retryDead)', async () => {
    const name = 'declared';
    const queue = await open(name);
    const [a, b] = await queue.submitMany([{ type: 't' }, { type: 't' }]);
    const monitor = new Redis(await cluster.masterOf(`{${name}}`), '127.0.0.1');
    const seen: string[][] = [];
    const feed = await monitor.monitor();
    feed.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'fcall') seen.push(args);
    });
    try {
      const lease = (await queue.poll('w', 1000))!;
      await queue.extend(lease.jobId, lease.token, 1000);
      await queue.fail(lease.jobId, lease.token, 'x', { permanent: true });
      await queue.retryDead(lease.jobId);
      await queue.view(lease.jobId);
      await queue.cancel(b!);
      const again = (await queue.poll('w', 1000))!;
      await queue.complete(again.jobId, again.token);
      await withTimeout((async () => {
        while (seen.length < 8) await new Promise((resolve) => setTimeout(resolve, 10));
      })(), 5000, 'MONITOR to show every call');
    } finally {
      feed.disconnect();
      monitor.disconnect();
    }
    // In call order: poll, extend, fail, retryDead, view, cancel, poll, complete. A poll names no job: only the queue's own keys.
    const fixed = Number(seen[0]![2]);
    expect(seen.map((args) => Number(args[2]))).toEqual([fixed, fixed + 1, fixed + 1, fixed + 1, fixed + 1, fixed + 1, fixed, fixed + 1]);
    const named = seen.filter((args) => Number(args[2]) === fixed + 1).map((args) => args[3 + fixed]);
    expect(named).toEqual([a, a, a, a, b, a].map((id) => `leasehold:{${name}}:job:${id!.slice(1)}`));
  });

  it('wakes a waitForWork on one client when another client submits, across the nodes', async () => {
    const name = 'wake';
    const worker = await open(name);
    const producer = await open(name);
    expect(await worker.poll('w', 1000)).toBeUndefined();
    const woken = worker.waitForWork(20_000);
    // A submit before the wait subscribed is seen by its read of the counter; one after arrives as a message: either wakes it.
    await producer.submit('t', 'p');
    expect(await withTimeout(woken, 20_000, 'waitForWork')).toBe(true);
  });
});
