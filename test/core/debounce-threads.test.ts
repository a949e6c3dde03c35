/**
 * Debounce under real worker_threads: submitter threads debounce one key
 * while a poller thread leases and completes what comes due (moving the
 * shared ManualClock on when nothing is ready). Every submit's id must be a
 * job that ran exactly once, with the payload of the last submit (of each
 * thread's own order) that returned its id: a payload never lost to a
 * replace that did not land, nor run by a job its submit was not told of.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { startWorker, terminateAll, withTimeout } from '../support/helpers.js';

const SUBMITTERS = 3;
const ROUNDS = 400;
const KEY = 'doc-1';

async function raceOn(queue: JobQueue, clock: ManualClock): Promise<void> {
  const controlBuffer = new SharedArrayBuffer(16);
  const handle = queue.share();
  const parties = SUBMITTERS + 1;
  const common = { handle, parties, rounds: ROUNDS, key: KEY, debounceMillis: 3, controlBuffer, clockBuffer: clock.buffer };
  const workers = await Promise.all([
    ...Array.from({ length: SUBMITTERS }, (_, index) => startWorker('debounce-racer.mjs', { ...common, role: 'submit', index })),
    startWorker('debounce-racer.mjs', { ...common, role: 'poll', index: 0 }),
  ]);
  let reports: Array<{ ids?: string[]; leases?: Array<{ jobId: string; payload: string }> }>;
  try {
    reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 60_000, 'racing debouncers')) as typeof reports;
  } finally {
    await terminateAll(workers);
  }
  const leases = reports[SUBMITTERS]!.leases!;
  const ranWith = new Map<string, string>();
  for (const { jobId, payload } of leases) {
    expect(ranWith.has(jobId), `${jobId} leased twice`).toBe(false);
    ranWith.set(jobId, payload);
  }
  // Per job: the payload of each thread's last submit that returned it; the job ran with one of them.
  const lastOfThread = new Map<string, Map<number, string>>();
  for (const [thread, report] of reports.slice(0, SUBMITTERS).entries()) {
    expect(report.ids).toHaveLength(ROUNDS);
    report.ids!.forEach((id, round) => {
      expect(ranWith.has(id), `submit ${thread}:${round} got ${id}, which never ran`).toBe(true);
      if (!lastOfThread.has(id)) lastOfThread.set(id, new Map());
      lastOfThread.get(id)!.set(thread, `${thread}:${round}`);
    });
  }
  const wrong: string[] = [];
  for (const [id, payload] of ranWith) {
    const lasts = [...(lastOfThread.get(id)?.values() ?? [])];
    if (!lasts.includes(payload)) wrong.push(`${id} ran with ${payload}, the last submits returning it were ${lasts.join(', ')}`);
  }
  expect(wrong.slice(0, 5)).toEqual([]);
  // No job beyond those the submits were told of, and every one finished.
  const stats = queue.stats();
  expect(stats.succeeded).toBe(ranWith.size);
  expect(stats.pending + stats.running).toBe(0);
  // Debounce coalesced: far fewer jobs than submits (the poller lets the clock move 1 ms at a time, the window is 3).
  expect(ranWith.size).toBeLessThan(SUBMITTERS * ROUNDS);
}

describe('debounce across threads', () => {
  it(`${SUBMITTERS} threads debouncing one key while a thread polls: each job runs once, with its last payload`, async () => {
    const clock = new ManualClock(1_000_000);
    const queue = new JobQueue(clock, new RetryPolicy(3, 100, 1_000), { capacity: 4 * SUBMITTERS * ROUNDS });
    try {
      await raceOn(queue, clock);
    } finally {
      queue.close();
    }
  }, 90_000);

  it('does the same on a journaled queue, and a debounced holder survives a reopen with its payload and runAt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-debounce-'));
    const path = join(dir, 'queue.db');
    const clock = new ManualClock(1_000_000);
    const policy = new RetryPolicy(3, 100, 1_000);
    try {
      const queue = JobQueue.open(path, clock, policy, { capacity: 4 * SUBMITTERS * ROUNDS });
      let id: string;
      try {
        await raceOn(queue, clock);
        id = queue.submit('t', 'first', { key: 'after', debounceMillis: 500 });
        clock.advance(100);
        expect(queue.submit('t', 'second', { key: 'after', debounceMillis: 500 })).toBe(id);
      } finally {
        queue.close();
      }
      const reopened = JobQueue.open(path, clock, policy, { capacity: 4 * SUBMITTERS * ROUNDS });
      try {
        const view = reopened.view(id);
        expect(view.payload).toBe('second');
        expect(view.nextRunAt).toBe(clock.now() + 500);
        expect(reopened.submit('t', 'third', { key: 'after', debounceMillis: 500 })).toBe(id);
        expect(reopened.view(id).payload).toBe('third');
      } finally {
        reopened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
