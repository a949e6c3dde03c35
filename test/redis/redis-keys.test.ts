/**
 * Idempotent keys across real processes on one Redis queue, and on a
 * partitioned one: processes released at once submit the same keys in
 * different orders; each key must get one job, whose id every process got.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { expectInvalid, testSeed, withTimeout } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const SUBMITTER = fileURLToPath(new URL('../fixtures/redis-key-submitter.mjs', import.meta.url));
const PROCESSES = 4;
const KEYS = 400;

interface Queue {
  share(): unknown;
  stats(): Promise<{ pending: number; running: number; succeeded: number }>;
  view(id: string): Promise<{ key: string | null }>;
  close(): Promise<void>;
}

/** One submitter process: its lines as they come, and a way to start it. */
function submitter(handle: unknown, keys: readonly string[], seed: number, batches: boolean) {
  const child: ChildProcess = spawn(process.execPath, [SUBMITTER, JSON.stringify(handle), JSON.stringify(keys), String(seed), batches ? 'batches' : 'singles'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (data: Buffer) => (stderr += data.toString()));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<{ ev: string; idOfKey?: Record<string, string> }> => {
    const line = await lines.next();
    if (line.done === true) throw new Error(`a submitter exited early: ${stderr}`);
    return JSON.parse(line.value) as { ev: string; idOfKey?: Record<string, string> };
  };
  return { child, next, go: () => child.stdin!.write('go\n') };
}

async function race(queue: Queue, name: string, batches: boolean): Promise<void> {
  const keys = Array.from({ length: KEYS }, (_, i) => `order-${i}`);
  const seed = testSeed(name);
  const children = Array.from({ length: PROCESSES }, (_, i) => submitter(queue.share(), keys, seed + i, batches));
  try {
    for (const child of children) expect((await withTimeout(child.next(), 30_000, 'a submitter to start')).ev).toBe('ready');
    // Every process is connected and waiting: release them together.
    for (const child of children) child.go();
    const reports = await withTimeout(Promise.all(children.map((child) => child.next())), 60_000, 'the submitters');
    const idOf = new Map<string, string>();
    const disagreements: string[] = [];
    reports.forEach((report, sender) => {
      expect(report.ev).toBe('done');
      for (const key of keys) {
        const id = report.idOfKey![key]!;
        const agreed = idOf.get(key);
        if (agreed === undefined) idOf.set(key, id);
        else if (agreed !== id) disagreements.push(`${key}: ${agreed}, and ${id} for process ${sender}`);
      }
    });
    expect(disagreements.slice(0, 10)).toEqual([]);
    expect(new Set(idOf.values()).size).toBe(KEYS);
    const stats = await queue.stats();
    expect(stats.pending + stats.running + stats.succeeded).toBe(KEYS);
    for (const key of keys) expect((await queue.view(idOf.get(key)!)).key).toBe(key);
  } finally {
    for (const { child } of children) child.kill('SIGKILL');
  }
}

describeRedis('idempotent submit across processes', () => {
  it(`gives ${PROCESSES} processes racing on ${KEYS} keys (one by one and in batches) one job per key, and the same id for each`, { timeout: 120_000 }, async () => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name: `keys-${process.pid}`, policy: new RetryPolicy(3, 100, 1_000) });
    try {
      await race(queue, 'redis keys one queue', true);
    } finally {
      await queue.close();
    }
  });

  it('does the same on a queue of 3 partitions: a key always reaches its own partition', { timeout: 120_000 }, async () => {
    const server = await fileRedis();
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name: `keys-parts-${process.pid}`, policy: new RetryPolicy(3, 100, 1_000), partitions: 3 });
    try {
      await race(queue, 'redis keys partitions', false);
      // A batch whose keys hash to different partitions could not be all or none: refused, nothing stored.
      const error = await expectInvalid(() => queue.submitMany(Array.from({ length: 8 }, (_, i) => ({ type: 't', key: `spread-${i}` }))));
      expect(error.message).toContain('share a partition');
      expect((await queue.stats()).pending).toBe(KEYS);
    } finally {
      await queue.close();
    }
  });
});
