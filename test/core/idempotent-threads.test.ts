/**
 * Idempotent keys under real worker_threads: submitters race on the same
 * keys (one by one and in batches, each in its own seeded order) while a
 * drainer completes jobs lock-free; every thread's id for each key must be
 * the same, and the queue must hold exactly one job per key. Seeds are
 * printed; replay with LEASEHOLD_SEED.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { startWorker, terminateAll, testSeed, withTimeout } from '../support/helpers.js';

const SUBMITTERS = 4;
const KEYS = 2_000;
/** Long enough that a key stays taken after its job was completed: every submit of a key must agree. */
const KEY_TTL = 10 ** 12;

async function raceOn(queue: JobQueue, name: string): Promise<void> {
  const keys = Array.from({ length: KEYS }, (_, i) => `key-${i}`);
  const seed = testSeed(name);
  const controlBuffer = new SharedArrayBuffer(16);
  const handle = queue.share();
  const parties = SUBMITTERS + 1;
  const workers = await Promise.all([
    ...Array.from({ length: SUBMITTERS }, (_, index) =>
      startWorker('key-submitter.mjs', { handle, role: 'submit', index, parties, keys, seed: seed + index, keyTtlMillis: KEY_TTL, controlBuffer })),
    startWorker('key-submitter.mjs', { handle, role: 'drain', index: 0, parties, keys, seed, keyTtlMillis: KEY_TTL, controlBuffer }),
  ]);
  let reports: Array<{ idOfKey?: Record<string, string>; completed?: number }>;
  try {
    reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 60_000, 'racing submitters')) as typeof reports;
  } finally {
    await terminateAll(workers);
  }
  const disagreements: string[] = [];
  const idOf = new Map<string, string>();
  for (const [thread, report] of reports.slice(0, SUBMITTERS).entries()) {
    for (const key of keys) {
      const id = report.idOfKey![key]!;
      const agreed = idOf.get(key);
      if (agreed === undefined) idOf.set(key, id);
      else if (agreed !== id) disagreements.push(`${key}: ${agreed}, and ${id} for thread ${thread}`);
    }
  }
  expect(disagreements.slice(0, 10)).toEqual([]);
  // One job per key: as many distinct ids as keys, and no other job in the queue.
  const ids = new Set(idOf.values());
  expect(ids.size).toBe(KEYS);
  const stats = queue.stats();
  expect(stats.pending + stats.running + stats.succeeded).toBe(KEYS);
  expect(stats.succeeded).toBe(reports[SUBMITTERS]!.completed);
  for (const key of keys) expect(queue.view(idOf.get(key)!).key).toBe(key);
}

describe('idempotent submit across threads', () => {
  it(`gives ${SUBMITTERS} threads racing on ${KEYS} keys one job per key, and the same id for each key in every thread`, async () => {
    const queue = new JobQueue(new ManualClock(1_000_000), new RetryPolicy(3, 100, 1_000), { capacity: 4 * KEYS });
    try {
      await raceOn(queue, 'idempotent threads memory');
    } finally {
      queue.close();
    }
  }, 90_000);

  it('does the same on a journaled queue, and the keys survive a reopen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-keys-'));
    const path = join(dir, 'queue.db');
    const clock = new ManualClock(1_000_000);
    const policy = new RetryPolicy(3, 100, 1_000);
    try {
      const queue = JobQueue.open(path, clock, policy, { capacity: 4 * KEYS });
      const before = new Map<string, string>();
      try {
        await raceOn(queue, 'idempotent threads journal');
        for (let i = 0; i < KEYS; i += 97) before.set(`key-${i}`, queue.submit('t', 'again', { key: `key-${i}` }));
      } finally {
        queue.close();
      }
      const reopened = JobQueue.open(path, clock, policy, { capacity: 4 * KEYS });
      try {
        for (const [key, id] of before) expect(reopened.submit('t', 'after reopen', { key })).toBe(id);
        expect(reopened.stats().pending + reopened.stats().running + reopened.stats().succeeded).toBe(KEYS);
      } finally {
        reopened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
