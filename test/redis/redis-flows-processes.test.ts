/**
 * Flows racing across PROCESSES, on Redis and on a PartitionedRedisQueue:
 * three processes poll batches and complete what they leased, children of
 * many nested flows at once (test/fixtures/redis-flow-racer.mjs). A parent
 * must be leased exactly once, and only once each of its children
 * SUCCEEDED: every racer checks, while it holds a child's lease, that the
 * child's parent still waits, and, when it leases a parent, that all its
 * children's results are there. A parent readied one child early is seen
 * waiting for none by the racer holding its last child.
 */
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PartitionedRedisQueue, RedisJobQueue, RetryPolicy, systemClock, type FlowJob } from '../../dist/index.js';
import { withTimeout } from '../support/helpers.js';
import { killChildrenAfterEach, spawnJsonLines } from '../support/json-lines-child.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const RACER = fileURLToPath(new URL('../fixtures/redis-flow-racer.mjs', import.meta.url));
const RACERS = 3;
const FLOWS = 30;

killChildrenAfterEach();

/** A job of the flow whose payload says how many children it has, for the racers. */
function node(type: string, children: FlowJob[] = []): FlowJob {
  return { type, payload: JSON.stringify({ children: children.length }), children };
}

/** A root with 3 parents of 4 leaves each and 2 leaves of its own: 18 jobs, 4 parents. */
function flow(): FlowJob {
  const mids = Array.from({ length: 3 }, () => node('mid', Array.from({ length: 4 }, () => node('leaf'))));
  return node('root', [...mids, node('leaf'), node('leaf')]);
}

async function raceInProcesses(queue: RedisJobQueue | PartitionedRedisQueue): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < FLOWS; i++) ids.push(...(await queue.submitFlow(flow())));
  const handle = queue.share();
  const racers = Array.from({ length: RACERS }, (_, i) => spawnJsonLines(RACER, [JSON.stringify(handle), `r${i}`], `r${i}`));
  await withTimeout(Promise.all(racers.map((r) => r.said('ready'))), 30_000, 'racers ready');
  for (const r of racers) r.child.stdin!.write('go\n');
  const reports = (await withTimeout(Promise.all(racers.map((r) => r.said('done'))), 120_000, 'racers done')) as unknown as { leased: string[]; violations: string[] }[];
  const leases = new Map<string, number>();
  for (const { leased } of reports) for (const id of leased) leases.set(id, (leases.get(id) ?? 0) + 1);
  const twice = [...leases].filter(([, count]) => count !== 1).map(([id]) => id);
  const violations = reports.flatMap((report) => report.violations);
  console.log(`[flows, processes] ${ids.length} jobs in ${FLOWS} flows; leases per racer ${reports.map((r) => r.leased.length).join(', ')}; violations ${violations.length}`);
  expect(violations.slice(0, 10)).toEqual([]);
  expect(twice).toEqual([]);
  expect(leases.size).toBe(ids.length);
  // Every racer took part: the completes of one parent's children came from several processes.
  for (const report of reports) expect(report.leased.length).toBeGreaterThan(0);
  expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: ids.length, dead: 0, waitingChildren: 0 });
  for (const id of ids.filter((_, i) => i % 18 === 0)) expect((await queue.view(id)).attempts).toBe(1);
}

describeRedis('flows racing in other processes', () => {
  it('on a RedisJobQueue: every parent leased once, and only after all its children succeeded', async () => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name: `flows-race-${process.pid}`, time: systemClock, policy: new RetryPolicy(3, 0, 0) });
    try {
      await raceInProcesses(queue);
    } finally {
      await queue.close();
    }
  }, 180_000);

  it('on a PartitionedRedisQueue of 3 partitions: the same, each flow in its partition', async () => {
    const server = await fileRedis();
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name: `flows-race-p-${process.pid}`, partitions: 3, time: systemClock, policy: new RetryPolicy(3, 0, 0) });
    try {
      await raceInProcesses(queue);
    } finally {
      await queue.close();
    }
  }, 180_000);
});
