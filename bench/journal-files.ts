/** Fresh journal files for the journal suites: one temporary directory per suite run, deleted afterwards. */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { MiB } from './conditions.js';
import type { Row } from './report.js';

// Nothing is evicted: submitMany keeps every job it submits pending, ~0.4M in a full run here, so there is room for twice that.
export const JOURNAL_OPTIONS = { synchronous: 'NORMAL', capacity: 1 << 21, arenaBytes: 256 * MiB } as const;

/** What every journal suite's cases run on, as config rows named after the suite. */
export function journalSettings(suiteId: string): Row {
  return {
    [`${suiteId}: files`]: 'one fresh SQLite file per case under os.tmpdir(), WAL, synchronous NORMAL; deleted afterwards',
    [`${suiteId}: leasehold`]: `JobQueue.open, capacity ${JOURNAL_OPTIONS.capacity}, arenaBytes ${JOURNAL_OPTIONS.arenaBytes}; nothing evicted (checked after the run)`,
    [`${suiteId}: job`]: '"x" (1 byte), type "noop", priority 0',
  };
}

export interface JournalFiles {
  /** The path of a fresh file in the directory. */
  path(name: string): string;
  /** A journaled queue on a fresh file, closed by `close()`. */
  open(name: string): JobQueue;
  /** Closes every queue opened here and deletes the directory. */
  close(): void;
}

export function journalFiles(prefix: string): JournalFiles {
  const dir = mkdtempSync(join(os.tmpdir(), `leasehold-bench-${prefix}-`));
  const queues: JobQueue[] = [];
  const path = (name: string) => join(dir, `${name}.sqlite`);
  return {
    path,
    open(name) {
      const queue = JobQueue.open(path(name), systemClock, new RetryPolicy(3, 100, 1_000), JOURNAL_OPTIONS);
      queues.push(queue);
      return queue;
    },
    close() {
      try {
        for (const queue of queues) queue.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Notes if a queue does not hold what its case put in, e.g. jobs evicted. */
export function checkHolds(name: string, queue: JobQueue, expected: { pending?: number; succeeded?: number }): string[] {
  const stats = queue.stats();
  const pending = expected.pending ?? 0;
  const succeeded = expected.succeeded ?? 0;
  if (stats.pending === pending && stats.succeeded === succeeded && stats.running === 0 && stats.dead === 0) return [];
  return [`${name} queue holds ${JSON.stringify(stats)} after the run; expected ${pending} pending, ${succeeded} succeeded`];
}
