/**
 * A journaled queue keeps a job's progress (its latest lease's) across a
 * reopen, a reopen that counts a lost attempt keeps it until the next attempt
 * begins, and a journal of schema 8, which kept none, opens with none.
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

describe('progress in the journal', () => {
  it('keeps each job\'s latest progress across a reopen; the next attempt starts with none', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const done = queue.submit('t', 'done');
    const running = queue.submit('t', 'running');
    const silent = queue.submit('t', 'silent');
    const doneLease = mustPollSync(queue, done);
    queue.progress(done, doneLease.token, 100);
    queue.complete(done, doneLease.token);
    const lease = mustPollSync(queue, running);
    queue.progress(running, lease.token, 12.5);
    queue.progress(running, lease.token, 37.25);
    mustPollSync(queue, silent);
    // Closed with leases out: the reopen counts those attempts as failed.
    closeJournal(queue);
    clock.advance(1_000);
    queue = openJournal(path, clock);
    expect(queue.view(done)).toMatchObject({ status: 'SUCCEEDED', progress: 100 });
    expect(queue.view(running)).toMatchObject({ status: 'PENDING', attempts: 1, progress: 37.25 });
    expect(queue.view(silent).progress).toBeUndefined();
    clock.advance(100); // the retry's backoff
    const next = mustPollSync(queue, running);
    expect(queue.view(running).progress).toBeUndefined();
    queue.progress(running, next.token, 1);
    closeJournal(queue);
    queue = openJournal(path, clock);
    expect(queue.view(running).progress).toBe(1);
    closeJournal(queue);
  });

  it('opens a schema-8 journal: no job has progress, and a new report is kept', () => {
    const path = tempJournal();
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    for (const migration of MIGRATIONS.slice(0, 8)) db.exec(migration);
    db.pragma('user_version = 8');
    db.prepare(
      `INSERT INTO jobs (num, type, payload, priority, status, attempts, run_at, last_error, token, lease_until, finish_seq, worker_id, moves)
       VALUES (1, 't', 'p', 0, 'PENDING', 0, ?, NULL, 0, 0, 0, NULL, 1)`,
    ).run(T0);
    db.prepare('INSERT INTO meta VALUES (?, ?)').run('job_seq', 1);
    db.prepare('INSERT INTO meta VALUES (?, ?)').run('token_seq', 0);
    db.close();

    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    expect(queue.view('J1').progress).toBeUndefined();
    const lease = mustPollSync(queue, 'J1');
    queue.progress('J1', lease.token, 0.5);
    closeJournal(queue);
    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(after.prepare('SELECT progress FROM jobs WHERE num = 1').get()).toEqual({ progress: 0.5 });
    after.close();
    queue = openJournal(path, clock);
    expect(queue.view('J1').progress).toBe(0.5);
    closeJournal(queue);
  });
});
