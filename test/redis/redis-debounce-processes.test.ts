/**
 * Debounce racing across PROCESSES, on Redis and on a PartitionedRedisQueue:
 * three processes debounce one key while a fourth polls and completes what
 * comes due. Every submit's id must be a job that ran exactly once, with the
 * payload of the last submit (in its own process's order) that returned that
 * id: the replace and the runAt push are one script, never half.
 */
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PartitionedRedisQueue, RedisJobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { withTimeout } from '../support/helpers.js';
import { killChildrenAfterEach, spawnJsonLines, type JsonLinesChild } from '../support/json-lines-child.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const RACER = fileURLToPath(new URL('../fixtures/redis-debounce-racer.mjs', import.meta.url));
const SUBMITTERS = 3;
const ROUNDS = 150;

killChildrenAfterEach();

function racer(handle: unknown, args: readonly string[]): JsonLinesChild {
  return spawnJsonLines(RACER, [JSON.stringify(handle), ...args], args[0]!);
}

async function raceInProcesses(queue: RedisJobQueue | PartitionedRedisQueue): Promise<void> {
  const handle = queue.share();
  const submitters = Array.from({ length: SUBMITTERS }, (_, i) => racer(handle, ['submitter', `s${i}`, String(ROUNDS)]));
  const poller = racer(handle, ['poller']);
  const all = [...submitters, poller];
  await withTimeout(Promise.all(all.map((r) => r.said('ready'))), 30_000, 'racers ready');
  for (const r of all) r.child.stdin!.write('go\n');
  const reports = (await withTimeout(Promise.all(submitters.map((r) => r.said('done'))), 60_000, 'submitters done')) as unknown as { ids: string[] }[];
  poller.child.stdin!.write('stop\n');
  const { leases } = (await withTimeout(poller.said('done'), 60_000, 'poller done')) as { leases: [string, string][] };

  const ranWith = new Map<string, string>();
  const problems: string[] = [];
  for (const [id, payload] of leases) {
    if (ranWith.has(id)) problems.push(`${id} leased twice`);
    ranWith.set(id, payload);
  }
  const lastOfProcess = new Map<string, Map<number, string>>();
  reports.forEach(({ ids }, process) => {
    expect(ids).toHaveLength(ROUNDS);
    ids.forEach((id, round) => {
      if (!ranWith.has(id)) problems.push(`s${process}:${round} got ${id}, which never ran`);
      if (!lastOfProcess.has(id)) lastOfProcess.set(id, new Map());
      lastOfProcess.get(id)!.set(process, `s${process}:${round}`);
    });
  });
  for (const [id, payload] of ranWith) {
    const lasts = [...(lastOfProcess.get(id)?.values() ?? [])];
    if (!lasts.includes(payload)) problems.push(`${id} ran with ${payload}; the last submits returning it were ${lasts.join(', ')}`);
  }
  console.log(`[debounce, processes] ${SUBMITTERS * ROUNDS} submits made ${ranWith.size} jobs`);
  expect(problems.slice(0, 10)).toEqual([]);
  const stats = await queue.stats();
  expect(stats.pending + stats.running).toBe(0);
  expect(stats.succeeded).toBe(ranWith.size);
}

describeRedis('debounce racing in other processes', () => {
  it('on a RedisJobQueue: every submit\'s job runs once, with the last payload it was given', async () => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name: `debounce-${process.pid}`, time: systemClock, policy: new RetryPolicy(3, 0, 0) });
    try {
      await raceInProcesses(queue);
    } finally {
      await queue.close();
    }
  }, 120_000);

  it('on a PartitionedRedisQueue of 3 partitions: the same, in the key\'s partition', async () => {
    const server = await fileRedis();
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name: `debounce-p-${process.pid}`, partitions: 3, time: systemClock, policy: new RetryPolicy(3, 0, 0) });
    try {
      await raceInProcesses(queue);
    } finally {
      await queue.close();
    }
  }, 120_000);
});
