/**
 * Idempotent keys and per-job timeouts in the SQLite journal: they survive a
 * reopen with their state (a key held, a TTL running, a key freed), and a
 * journal of the schema before them opens with neither.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ManualClock, RetryPolicy, type JobQueue } from '../../dist/index.js';
import { T0, mustPollSync } from '../support/helpers.js';
import { SCHEMA_VERSION, closeJournal, downgradeToSchema3, openJournal as openTracked, tempJournal } from '../support/journal-harness.js';

const policy = (): RetryPolicy => new RetryPolicy(1, 100, 10_000);

function openJournal(path: string, clock: ManualClock): JobQueue {
  return openTracked(path, clock, policy());
}

function reopen(queue: JobQueue, path: string, clock: ManualClock): JobQueue {
  closeJournal(queue);
  return openJournal(path, clock);
}

describe('journal: idempotent keys and timeouts', () => {
  it('keeps a PENDING keyed job holding its key, and a finished one holding it for its TTL, across reopens', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const pending = queue.submit('t', 'p', { key: 'pending', delayMillis: 60_000 });
    const done = queue.submit('t', 'p', { key: 'done', keyTtlMillis: 500 });
    const free = queue.submit('t', 'p', { key: 'free' });
    for (const id of [done, free]) queue.complete(id, mustPollSync(queue, id).token);
    clock.advance(100);
    queue = reopen(queue, path, clock);
    expect(queue.view(done)).toMatchObject({ status: 'SUCCEEDED', key: 'done' });
    expect(queue.submit('t', 'again', { key: 'pending' })).toBe(pending);
    expect(queue.submit('t', 'again', { key: 'done' })).toBe(done);
    const next = queue.submit('t', 'again', { key: 'free' });
    expect(next).toBe('J4');
    clock.advance(400);
    queue = reopen(queue, path, clock);
    // 500 ms after it finished: free.
    expect(queue.submit('t', 'again', { key: 'done' })).toBe('J5');
    expect(queue.submit('t', 'again', { key: 'free' })).toBe(next);
    closeJournal(queue);
  });

  it('counts a keyed job lost RUNNING at the reopen as finished then: its TTL runs from the reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p', { key: 'k', keyTtlMillis: 1_000 });
    mustPollSync(queue, id, 60_000);
    queue.flush();
    clock.advance(300);
    queue = reopen(queue, path, clock);
    expect(queue.view(id).status).toBe('DEAD');
    clock.advance(999);
    queue = reopen(queue, path, clock);
    expect(queue.submit('t', 'p', { key: 'k' })).toBe(id);
    clock.advance(1);
    expect(queue.submit('t', 'p', { key: 'k' })).toBe('J2');
    closeJournal(queue);
  });

  it("keeps a job's own timeout across a reopen", () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p', { timeoutMillis: 25 });
    queue = reopen(queue, path, clock);
    expect(queue.view(id).timeoutMillis).toBe(25);
    expect(mustPollSync(queue, id, 60_000).leaseUntil).toBe(T0 + 25);
    closeJournal(queue);
  });

  it('opens a journal of schema 3: its jobs have no key and no timeout of their own', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    closeJournal(openJournal(path, clock));
    const db = new Database(path);
    downgradeToSchema3(db);
    db.prepare(`INSERT INTO jobs (num, type, payload, priority, status, attempts, run_at, last_error, token, lease_until, finish_seq, worker_id, moves, max_attempts)
      VALUES (1, 'old', 'p', 0, 'PENDING', 0, ${T0}, NULL, 0, 0, 0, NULL, 1, 0)`).run();
    db.close();
    const queue = openJournal(path, clock);
    expect(queue.view('J1')).toMatchObject({ key: null, timeoutMillis: null });
    expect(queue.submit('t', 'p', { key: 'k' })).toBe('J2');
    closeJournal(queue);
    const after = new Database(path);
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(after.prepare('SELECT idem_key FROM jobs WHERE num = 2').get()).toEqual({ idem_key: 'k' });
    after.close();
  });
});
