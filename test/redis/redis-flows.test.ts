/**
 * Flows on Redis beyond the contract (test/contract/flows.test.ts): the data
 * model a flow moves a queue to, the lease-expiry catch-up counting a child's
 * death, a restart of Redis (AOF) keeping waiting parents, and the
 * partitioned queue holding a whole flow in one partition, and the
 * dashboard's waiting-children tab over Redis.
 */
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy, type FlowJob, type JobView } from '../../dist/index.js';
import { createDashboardAdapter } from '../../dist/dashboard/index.js';
import { T0 } from '../support/helpers.js';
import { describeRedis, fileRedis, startRedis } from '../support/redis-harness.js';

const LEASE = 60_000;
let names = 0;

function flowOf(n: number, extra: Partial<FlowJob> = {}): FlowJob {
  return { type: 'parent', payload: 'p', children: Array.from({ length: n }, (_, i) => ({ type: 'child', payload: `c${i}` })), ...extra };
}

function flowState(view: JobView): Pick<JobView, 'status' | 'parentId' | 'waitingChildren'> {
  const { status, parentId, waitingChildren } = view;
  return { status, ...(parentId === undefined ? {} : { parentId }), ...(waitingChildren === undefined ? {} : { waitingChildren }) };
}

async function connect(url: string, name: string, clock: ManualClock, maxAttempts = 3): Promise<RedisJobQueue> {
  return RedisJobQueue.connect({ redis: url, name, time: clock, policy: new RetryPolicy(maxAttempts, 0, 0) });
}

describeRedis('flows on Redis', () => {
  it('move the data model up with the first flow (6; 7 with groups, 8 with bytes), and leave a queue without flows as it was', async () => {
    const server = await fileRedis();
    const admin = new Redis(server.url);
    const clock = new ManualClock(T0);
    const opened: RedisJobQueue[] = [];
    const version = (name: string) => admin.hget(`leasehold:{${name}}:state`, 'version');
    try {
      const plain = `flows-model-${process.pid}-${++names}`;
      opened.push(await connect(server.url, plain, clock));
      await opened[0]!.submit('t', 'x');
      expect(await version(plain)).toBe('2');
      expect(await opened[0]!.stats()).not.toHaveProperty('waitingChildren');
      await opened[0]!.submitFlow(flowOf(1));
      expect(await version(plain)).toBe('6');
      expect(await opened[0]!.stats()).toMatchObject({ waitingChildren: 1, pending: 3, ready: 2, delayed: 1 });
      const grouped = `flows-model-${process.pid}-${++names}`;
      opened.push(await connect(server.url, grouped, clock));
      await opened[1]!.submitFlow({ type: 'p', children: [{ type: 'c', options: { group: 'g' } }] });
      expect(await version(grouped)).toBe('7');
      await opened[1]!.submit('t', new Uint8Array([1, 2]));
      expect(await version(grouped)).toBe('9');
      const bytes = `flows-model-${process.pid}-${++names}`;
      opened.push(await connect(server.url, bytes, clock));
      await opened[2]!.submitFlow({ type: 'p', payload: new Uint8Array([0]), children: [{ type: 'c' }] });
      expect(await version(bytes)).toBe('8');
      // A flow's queue is refused by a build that knows 2 to 5 only: the version it names is not one of those.
      expect(['2', '3', '4', '5']).not.toContain(await version(bytes));
    } finally {
      await Promise.all(opened.map((queue) => queue.close()));
      admin.disconnect();
    }
  });

  it("count a child's death by lease expiry, found by the catch-up: the parent dies under 'fail', counts it under 'ignore'", async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const queue = await connect(server.url, `flows-expiry-${process.pid}-${++names}`, clock, 1);
    try {
      await queue.submitFlow(flowOf(1));
      await queue.submitFlow(flowOf(2, { onChildFailure: 'ignore' }));
      const leased = await queue.pollMany('w', 1_000, 3);
      expect(leased.map((lease) => lease.jobId)).toEqual(['J2', 'J4', 'J5']);
      await queue.complete('J5', leased[2]!.token, 'five');
      clock.advance(1_000);
      // Any call catches up: J2's and J4's leases ran out, their last attempt; J1 dies of J2 in the same script.
      const stats = await queue.stats();
      expect(stats).toMatchObject({ dead: 3, waitingChildren: 0, ready: 1 });
      expect(await queue.view('J1')).toMatchObject({ status: 'DEAD', lastError: 'child J2 is DEAD' });
      expect(flowState(await queue.view('J3'))).toEqual({ status: 'PENDING' });
      const parent = await queue.poll('w', LEASE);
      expect(parent?.jobId).toBe('J3');
      expect(await queue.childResults('J3')).toEqual({ J5: 'five' });
    } finally {
      await queue.close();
    }
  });

  it('keep waiting parents, their counts and links across a restart of Redis (AOF), then run them once their children succeeded', async () => {
    const server = await startRedis({ appendfsync: 'always' });
    const clock = new ManualClock(T0);
    const name = `flows-restart-${process.pid}-${++names}`;
    let queue = await connect(server.url, name, clock);
    try {
      await queue.submitFlow({ type: 'root', children: [{ type: 'mid', onChildFailure: 'ignore', children: [{ type: 'leaf' }, { type: 'leaf' }] }, { type: 'leaf' }] });
      const first = await queue.poll('w', LEASE);
      await queue.complete(first!.jobId, first!.token, 'three');
      await queue.close();
      await server.kill();
      await server.restart();
      queue = await connect(server.url, name, clock);
      expect(flowState(await queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 2 });
      expect(flowState(await queue.view('J2'))).toEqual({ status: 'PENDING', parentId: 'J1', waitingChildren: 1 });
      expect(await queue.stats()).toMatchObject({ waitingChildren: 2, delayed: 2, ready: 2 });
      const ran: string[] = [];
      for (let lease = await queue.poll('w', LEASE); lease !== undefined; lease = await queue.poll('w', LEASE)) {
        ran.push(lease.jobId);
        await queue.complete(lease.jobId, lease.token, lease.jobId);
      }
      // J2, ready once J4 succeeded, at the same runAt as J5, comes first by submission order (as in memory).
      expect(ran).toEqual(['J4', 'J2', 'J5', 'J1']);
      expect(await queue.childResults('J1')).toEqual({ J2: 'J2', J5: 'J5' });
    } finally {
      await queue.close();
      await server.stop();
    }
  });

  it('on a PartitionedRedisQueue: put a whole flow in one partition, the next in turn, and run it there', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name: `flows-p-${process.pid}-${++names}`, partitions: 3, time: clock, policy: new RetryPolicy(2, 0, 0) });
    try {
      const flows = [await queue.submitFlow(flowOf(2)), await queue.submitFlow(flowOf(2)), await queue.submitFlow({ type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf' }] }] })];
      // Partition p numbers its jobs p + 1, p + 1 + 3, ...: every job of a flow is of one partition, each flow of another.
      const partitionOf = (id: string) => (Number(id.slice(1)) - 1) % 3;
      for (const ids of flows) expect(new Set(ids.map(partitionOf)).size).toBe(1);
      expect(new Set(flows.map((ids) => partitionOf(ids[0]!))).size).toBe(3);
      expect(await queue.stats()).toMatchObject({ waitingChildren: 4, pending: 9 });
      const ran: string[] = [];
      for (let lease = await queue.poll('w', LEASE); lease !== undefined; lease = await queue.poll('w', LEASE)) {
        ran.push(lease.type);
        await queue.complete(lease.jobId, lease.token, lease.jobId);
      }
      expect(ran.filter((type) => type === 'parent' || type === 'root' || type === 'mid')).toHaveLength(4);
      const [parentOf] = flows;
      expect(await queue.childResults(parentOf![0]!)).toEqual({ [parentOf![1]!]: parentOf![1], [parentOf![2]!]: parentOf![2] });
      expect(await queue.stats()).toMatchObject({ waitingChildren: 0, pending: 0, succeeded: 9 });
    } finally {
      await queue.close();
    }
  });
  it("fill the dashboard's waiting-children tab: counted apart from the delayed jobs, listed, and left once the last child succeeded", async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const queue = await connect(server.url, `flows-board-${process.pid}-${++names}`, clock);
    try {
      const adapter = await createDashboardAdapter(queue, { name: 'flows', time: clock });
      const [root, mid, leaf] = await queue.submitFlow({ type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf' }] }] });
      const delayed = await queue.submit('later', 'x', { delayMillis: 60_000 });
      expect(await queue.stats()).toMatchObject({ pending: 4, ready: 1, delayed: 3, waitingChildren: 2 });
      expect(await adapter.getJobCounts()).toMatchObject({ 'waiting-children': 2, delayed: 1, waiting: 1 });
      const listed = async (tab: 'waiting-children' | 'delayed' | 'waiting') => (await adapter.getJobs([tab])).map((job) => job.toJSON().id);
      expect(await listed('waiting-children')).toEqual([root, mid]);
      expect(await listed('delayed')).toEqual([delayed]);
      expect(await (await adapter.getJob(root!))!.getState()).toBe('waiting-children');
      const lease = await queue.poll('w', LEASE);
      expect(lease?.jobId).toBe(leaf);
      await queue.complete(leaf!, lease!.token);
      expect(await adapter.getJobCounts()).toMatchObject({ 'waiting-children': 1, delayed: 1, waiting: 1 });
      expect(await listed('waiting')).toEqual([mid]);
      await queue.cancel(root!);
      expect(await queue.stats()).toMatchObject({ waitingChildren: 0, delayed: 1 });
      expect(await listed('waiting-children')).toEqual([]);
    } finally {
      await queue.close();
    }
  });
  it('ready a parent in the batch that completes its last children, and lease it in the same call; a grouped parent takes its turn then', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const queue = await connect(server.url, `flows-batch-${process.pid}-${++names}`, clock);
    try {
      await queue.submitFlow({ type: 'parent', options: { group: 'P' }, children: [{ type: 'child', options: { group: 'C' } }, { type: 'child', options: { group: 'C' } }] });
      await queue.submit('t', 'C-more', { group: 'C' });
      const children = await queue.pollMany('w', LEASE, 2);
      expect(children.map((lease) => lease.jobId)).toEqual(['J2', 'J3']);
      const { refused, leases } = await queue.completeManyAndPoll(children.map(({ jobId, token }) => ({ jobId, token, result: jobId })), 'w', LEASE, 1);
      expect(refused).toEqual([]);
      // Ready since the batch's completes, P's first job takes the round's next turn, as C-more's; submitted first, it is leased by the batch's poll.
      expect(leases.map((lease) => lease.jobId)).toEqual(['J1']);
      expect(await queue.childResults('J1')).toEqual({ J2: 'J2', J3: 'J3' });
      expect(await queue.stats()).toMatchObject({ waitingChildren: 0, running: 1, ready: 1 });
    } finally {
      await queue.close();
    }
  });
});
