/**
 * Edits of PENDING jobs racing polls in other PROCESSES, on Redis and on a
 * PartitionedRedisQueue: one process edits every job (last first), another
 * polls and completes them (first first), both started by one `go`, so they
 * meet in the middle. Each edit is one script: either a poll leased the job
 * as it was and the edit was refused, or the edit landed and the poll saw it
 * (a new payload; a delay of an hour: never leased).
 */
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PartitionedRedisQueue, RedisJobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { withTimeout } from '../support/helpers.js';
import { killChildrenAfterEach, spawnJsonLines, type JsonLinesChild } from '../support/json-lines-child.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const RACER = fileURLToPath(new URL('../fixtures/redis-edit-racer.mjs', import.meta.url));
const JOBS = 300;

killChildrenAfterEach();

function racer(handle: unknown, role: 'editor' | 'poller', ids: readonly string[]): JsonLinesChild {
  return spawnJsonLines(RACER, [JSON.stringify(handle), role, JSON.stringify(ids)], role);
}

type EditQueue = RedisJobQueue | PartitionedRedisQueue;

async function raceInProcesses(queue: EditQueue): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < JOBS; i++) ids.push(await queue.submit('race', 'old'));
  const handle = queue.share();
  const editor = racer(handle, 'editor', ids);
  const poller = racer(handle, 'poller', ids);
  await withTimeout(Promise.all([editor.said('ready'), poller.said('ready')]), 30_000, 'racers ready');
  editor.child.stdin!.write('go\n');
  poller.child.stdin!.write('go\n');
  const { outcomes } = (await withTimeout(editor.said('done'), 60_000, 'editor done')) as { outcomes: Record<string, 'made' | 'refused'> };
  poller.child.stdin!.write('stop\n');
  const { leases } = (await withTimeout(poller.said('done'), 60_000, 'poller done')) as { leases: [string, string][] };

  const leased = new Map<string, string[]>();
  for (const [id, payload] of leases) leased.set(id, [...(leased.get(id) ?? []), payload]);
  const violations: string[] = [];
  let made = 0;
  for (let i = 0; i < JOBS; i++) {
    const id = ids[i]!;
    const outcome = outcomes[id];
    const payloads = leased.get(id) ?? [];
    if (outcome === 'made') made++;
    const say = (what: string) => violations.push(`${id} (${i % 2 === 0 ? 'updatePayload' : 'changeDelay'} ${outcome}): ${what}`);
    if (i % 2 === 0) {
      if (payloads.length !== 1) say(`leased ${payloads.length} times`);
      else if (payloads[0] !== (outcome === 'made' ? 'new' : 'old')) say(`leased with payload ${payloads[0]}`);
    } else {
      if (payloads.length !== (outcome === 'made' ? 0 : 1)) say(`leased ${payloads.length} times`);
      const status = (await queue.view(id)).status;
      if (status !== (outcome === 'made' ? 'PENDING' : 'SUCCEEDED')) say(`ended ${status}`);
    }
  }
  console.log(`[edits vs polls, processes] ${JOBS} jobs: ${made} edits made, ${JOBS - made} refused as leased first`);
  expect(violations.slice(0, 10)).toEqual([]);
}

describeRedis('edits of PENDING jobs racing polls in other processes', () => {
  it('on a RedisJobQueue: the poll leased the job as it was and the edit was refused, or the edit landed and the poll saw it', async () => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name: `edits-${process.pid}`, time: systemClock, policy: new RetryPolicy(3, 0, 0) });
    try {
      await raceInProcesses(queue);
    } finally {
      await queue.close();
    }
  }, 120_000);

  it('on a PartitionedRedisQueue of 3 partitions: the same, each edit in its job\'s partition', async () => {
    const server = await fileRedis();
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name: `edits-p-${process.pid}`, partitions: 3, time: systemClock, policy: new RetryPolicy(3, 0, 0) });
    try {
      await raceInProcesses(queue);
    } finally {
      await queue.close();
    }
  }, 120_000);
});
