/**
 * A journaled queue keeps a job's times (submittedAt, startedAt, finishedAt)
 * across a reopen, and a journal of schema 7, which kept none of them but a
 * keyed job's finish, opens with null where a time is unknown: never an
 * invented one.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ManualClock, RetryPolicy, type JobQueue } from '../../dist/index.js';
import { MIGRATIONS } from '../../dist/journal/migrations.js';
import { T0, mustPollSync } from '../support/helpers.js';
import { SCHEMA_VERSION, closeJournal, openJournal as openTracked, tempJournal } from '../support/journal-harness.js';

/** Three attempts, a backoff of 100 ms. */
function openJournal(path: string, clock: ManualClock): JobQueue {
  return openTracked(path, clock, new RetryPolicy(3, 100, 100));
}

describe('job times in the journal', () => {
  it('keeps each job\'s times across a reopen, and stamps the attempt a crash lost at the reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const done = queue.submit('t', 'done');
    const running = queue.submit('t', 'running');
    const pending = queue.submit('t', 'pending', 0, T0 + 10_000);
    clock.advance(10);
    const lease = mustPollSync(queue, done);
    clock.advance(10);
    queue.complete(done, lease.token);
    mustPollSync(queue, running);
    clock.advance(5);
    // Closed with a lease out: the reopen counts that attempt as failed (the job is retried).
    closeJournal(queue);
    clock.advance(100);
    queue = openJournal(path, clock);
    expect(queue.view(done)).toMatchObject({ status: 'SUCCEEDED', submittedAt: T0, startedAt: T0 + 10, finishedAt: T0 + 20 });
    expect(queue.view(running)).toMatchObject({ status: 'PENDING', submittedAt: T0, startedAt: T0 + 20, finishedAt: null });
    expect(queue.view(pending)).toMatchObject({ status: 'PENDING', submittedAt: T0, startedAt: null, finishedAt: null });
    closeJournal(queue);
  });

  it('opens a schema-7 journal: unknown times are null, a keyed job\'s finish is kept, and new moves are stamped', () => {
    const path = tempJournal();
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    for (const migration of MIGRATIONS.slice(0, 7)) db.exec(migration);
    db.pragma('user_version = 7');
    const insert = db.prepare(
      `INSERT INTO jobs (num, type, payload, priority, status, attempts, run_at, last_error, token, lease_until, finish_seq, worker_id, moves,
       idem_key, key_ttl, finished_at) VALUES (?, 't', 'p', 0, ?, ?, ?, NULL, ?, 0, ?, ?, 1, ?, ?, ?)`,
    );
    insert.run(1, 'PENDING', 0, T0, 0, 0, null, null, 0, 0);
    insert.run(2, 'PENDING', 1, T0, 3, 0, 'w1', null, 0, 0); // leased once before, then released
    insert.run(3, 'SUCCEEDED', 1, T0, 4, 1, 'w1', null, 0, 0); // schema 7 kept no finish time without a key
    insert.run(4, 'SUCCEEDED', 1, T0, 5, 2, 'w1', 'k', 60_000, T0 + 50);
    insert.run(5, 'DEAD', 1, T0, 6, 0, 'w1', 'k2', 0, T0 + 60);
    db.prepare('INSERT INTO meta VALUES (?, ?)').run('job_seq', 5);
    db.prepare('INSERT INTO meta VALUES (?, ?)').run('token_seq', 6);
    db.close();

    const clock = new ManualClock(T0 + 1_000);
    let queue = openJournal(path, clock);
    const unknown = { submittedAt: null, startedAt: null };
    expect(queue.view('J1')).toMatchObject({ ...unknown, finishedAt: null });
    expect(queue.view('J2')).toMatchObject({ ...unknown, finishedAt: null });
    expect(queue.view('J3')).toMatchObject({ ...unknown, finishedAt: null });
    expect(queue.view('J4')).toMatchObject({ ...unknown, finishedAt: T0 + 50 });
    expect(queue.view('J5')).toMatchObject({ ...unknown, finishedAt: T0 + 60 });
    // A lease of an old job is stamped; its wait runs from its runAt (no submit time known).
    const lease = mustPollSync(queue, 'J1');
    expect(lease.waitMillis).toBe(1_000);
    clock.advance(7);
    queue.complete('J1', lease.token);
    closeJournal(queue);

    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    const columns = after.prepare('PRAGMA table_info(jobs)').all() as Array<{ name: string; notnull: number }>;
    expect(columns.filter((c) => ['submitted_at', 'started_at', 'finished_at'].includes(c.name))).toEqual([
      expect.objectContaining({ name: 'submitted_at', notnull: 0 }),
      expect.objectContaining({ name: 'started_at', notnull: 0 }),
      expect.objectContaining({ name: 'finished_at', notnull: 0 }),
    ]);
    after.close();
    queue = openJournal(path, clock);
    expect(queue.view('J1')).toMatchObject({ status: 'SUCCEEDED', submittedAt: null, startedAt: T0 + 1_000, finishedAt: T0 + 1_007 });
    expect(queue.view('J3')).toMatchObject({ finishedAt: null });
    expect(queue.view('J4')).toMatchObject({ finishedAt: T0 + 50 });
    closeJournal(queue);
  });
});
