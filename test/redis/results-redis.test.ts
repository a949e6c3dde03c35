/**
 * finished() on Redis across processes: a child process finishes the jobs
 * (complete with and without a result, dead-letter) while this process's
 * finished() waits, woken by the queue's `finishes` channel, on one queue and
 * on a partitioned one.
 */
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { JobFailedError, PartitionedRedisQueue, RedisJobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { JsonLinesChild, waitUntil, withTimeout } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

let names = 0;

/** The other process: finishes the leases it is sent, answering each. */
class Finisher extends JsonLinesChild<{ ev: string; jobId?: string }> {
  constructor(handle: unknown) {
    super('redis-finisher.mjs', handle, 'the finisher process');
  }

  send(order: { jobId: string; token: number; how: 'complete' | 'fail'; result?: unknown }): void {
    this.write(JSON.stringify(order));
  }
}

const SHAPES = [
  {
    name: 'a RedisJobQueue',
    connect: (url: string, name: string) => RedisJobQueue.connect({ redis: url, name, policy: new RetryPolicy(1, 0, 0), time: systemClock }),
    channelOf: (name: string) => `leasehold:{${name}}:finishes`,
  },
  {
    name: 'a PartitionedRedisQueue of 3 partitions',
    connect: (url: string, name: string) => PartitionedRedisQueue.connect({ redis: url, name, policy: new RetryPolicy(1, 0, 0), time: systemClock, partitions: 3 }),
    // Job n is in partition (n - 1) % 3, a queue named name#partition.
    channelOf: (name: string, n: number) => `leasehold:{${name}#${(n - 1) % 3}}:finishes`,
  },
] as const;

for (const shape of SHAPES) describeRedis(`finished() across processes on ${shape.name}`, () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((thing) => thing.close()));
  });

  it('settles each wait of this process as the other process completes or dead-letters the job', { timeout: 60_000 }, async () => {
    const { url } = await fileRedis();
    const name = `finished-${process.pid}-${++names}`;
    const queue = await shape.connect(url, name);
    opened.push(queue);
    const admin = new Redis(url);
    opened.push({ close: async () => void admin.disconnect() });
    const finisher = new Finisher(queue.share());
    opened.push(finisher);
    expect(await finisher.next()).toMatchObject({ ev: 'ready' });

    const orders = [
      { how: 'complete', result: { rows: 3 } },
      { how: 'complete', result: undefined },
      { how: 'complete', result: 'text' },
      { how: 'fail', result: undefined },
    ] as const;
    const ids: string[] = [];
    for (let i = 0; i < orders.length; i++) ids.push(await queue.submit('t', String(i)));
    const leases = await queue.pollMany('main', 60_000, orders.length);
    expect(leases.map((lease) => lease.jobId).sort()).toEqual([...ids].sort());
    let settled = 0;
    const waits = ids.map((id) => queue.finished(id).then((result) => ({ result }), (error: unknown) => ({ error })).finally(() => settled++));
    // Every wait is subscribed (one connection per client, on each partition's channel) and has looked at its job, RUNNING.
    const channels = [...new Set(ids.map((id) => shape.channelOf(name, Number(id.slice(1)))))];
    await waitUntil('the waits subscribed', async () => {
      const counts = (await admin.pubsub('NUMSUB', ...channels)) as Array<string | number>;
      return counts.filter((_, i) => i % 2 === 1).every((count) => Number(count) > 0);
    });
    for (const id of ids) expect((await queue.view(id)).status).toBe('RUNNING');
    expect(settled).toBe(0);

    for (const [i, order] of orders.entries()) {
      const lease = leases.find((l) => l.jobId === ids[i])!;
      finisher.send({ jobId: lease.jobId, token: lease.token, ...order });
      expect(await finisher.next()).toEqual({ ev: order.how, jobId: lease.jobId });
      const outcome = await withTimeout(waits[i]!, 10_000, `finished(${ids[i]}) after the other process's ${order.how}`);
      if (order.how === 'fail') {
        expect((outcome as { error: JobFailedError }).error).toBeInstanceOf(JobFailedError);
        expect((outcome as { error: JobFailedError }).error).toMatchObject({ status: 'DEAD', lastError: 'poison', jobId: ids[i] });
      } else {
        expect(outcome).toEqual({ result: order.result });
      }
    }
  });
});
