/**
 * The harness of the journal tests: temp directories, journaled queues and
 * child processes, all cleaned up after every test (children killed, queues
 * closed so their journals are released, directories removed).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { JobQueue } from '../../dist/index.js';
import { MIGRATIONS } from '../../dist/journal/migrations.js';

const dirs: string[] = [];
const queues = new Set<JobQueue>();
/** Child processes to kill after the test, if still running. */
export const children: ChildProcess[] = [];

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-journal-'));
  dirs.push(dir);
  return dir;
}

/** A fresh journal path in its own temp directory. */
export function tempJournal(): string {
  return join(tempDir(), 'queue.db');
}

/** JobQueue.open, with the queue closed after the test whatever happens. */
export function openJournal(...args: Parameters<typeof JobQueue.open>): JobQueue {
  const queue = JobQueue.open(...args);
  queues.add(queue);
  return queue;
}

/** Closes `queue` now (releasing its journal) and stops tracking it. */
export function closeJournal(queue: JobQueue): void {
  queues.delete(queue);
  void queue.close();
}

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  for (const queue of queues) {
    try {
      await queue.close();
    } catch {
      // already closed or broken by the failing test; nothing more to release
    }
  }
  queues.clear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The schema version a journal has once this leasehold has opened it for writing. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Takes a journal this leasehold wrote back to schema 3, as leasehold wrote
 * it before results (4), idempotent keys and timeouts (5), schedules (6),
 * headers (7), job times (8), progress (9), groups (10) and flows (11), for the migration tests. `db` is a better-sqlite3 connection to it.
 */
export function downgradeToSchema3(db: { exec(sql: string): unknown; pragma(sql: string): unknown }): void {
  db.exec(`DROP TABLE schedules; DROP INDEX jobs_by_key;
    ALTER TABLE jobs DROP COLUMN idem_key; ALTER TABLE jobs DROP COLUMN key_ttl; ALTER TABLE jobs DROP COLUMN finished_at;
    ALTER TABLE jobs DROP COLUMN timeout_millis; ALTER TABLE jobs DROP COLUMN result; ALTER TABLE jobs DROP COLUMN headers;
    ALTER TABLE jobs DROP COLUMN submitted_at; ALTER TABLE jobs DROP COLUMN started_at;
    ALTER TABLE jobs DROP COLUMN progress; ALTER TABLE jobs DROP COLUMN group_name;
    ALTER TABLE jobs DROP COLUMN flow_parent; ALTER TABLE jobs DROP COLUMN waiting_children;`);
  db.pragma('user_version = 3');
}
