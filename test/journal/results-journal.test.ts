/**
 * Results in the SQLite journal: a SUCCEEDED job's result survives a
 * reopen, `finished` reports only what is committed, and a journal written
 * before results existed (schema version 3) opens, its jobs without one.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { JobFailedError, JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, mustPollSync } from '../support/helpers.js';
import { SCHEMA_VERSION, closeJournal, downgradeToSchema3, openJournal, tempJournal } from '../support/journal-harness.js';

const open = (path: string, clock: ManualClock): JobQueue => openJournal(path, clock, new RetryPolicy(3, 100, 10_000));

describe('results in the journal', () => {
  it('keeps every SUCCEEDED job\'s result across a reopen, and none for the others', async () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const ids = ['with', 'without', 'dead', 'viaCompleteAndPoll', 'pending'].map((name) => queue.submit('t', name));
    const [withResult, withoutResult, dead, viaCompleteAndPoll, pending] = ids as [string, string, string, string, string];
    queue.complete(withResult, mustPollSync(queue, withResult).token, { rows: [1, 2, 3], note: 'é'.repeat(100) });
    queue.complete(withoutResult, mustPollSync(queue, withoutResult).token);
    queue.fail(dead, mustPollSync(queue, dead).token, 'poison', { permanent: true });
    const lease = mustPollSync(queue, viaCompleteAndPoll);
    // completeAndPoll leases `pending` next: it comes back PENDING after the reopen (its lease lost), without a result.
    expect(queue.completeAndPoll(viaCompleteAndPoll, lease.token, 'w1', 1_000, 'last')?.jobId).toBe(pending);
    closeJournal(queue);

    const again = open(path, clock);
    expect(again.view(withResult).result).toEqual({ rows: [1, 2, 3], note: 'é'.repeat(100) });
    expect(again.view(viaCompleteAndPoll).result).toBe('last');
    expect([again.view(withoutResult).result, again.view(dead).result, again.view(pending).result]).toEqual([undefined, undefined, undefined]);
    await expect(again.finished(withResult)).resolves.toEqual({ rows: [1, 2, 3], note: 'é'.repeat(100) });
    await expect(again.finished(dead)).rejects.toBeInstanceOf(JobFailedError);
    // And a result stored after the reopen is kept by the next one (the lost attempt's backoff over).
    clock.advance(1_000);
    again.complete(pending, mustPollSync(again, pending).token, 7);
    closeJournal(again);
    expect(open(path, clock).view(pending).result).toBe(7);
  });

  it('resolves finished with a result its complete committed, waiting from before the complete', async () => {
    const path = tempJournal();
    const queue = open(path, new ManualClock(T0));
    const id = queue.submit('t');
    const lease = mustPollSync(queue, id);
    const waiting = queue.finished(id);
    queue.complete(id, lease.token, 'committed');
    await expect(waiting).resolves.toBe('committed');
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT status, result FROM jobs WHERE num = 1').get()).toEqual({ status: 'SUCCEEDED', result: '"committed"' });
    db.close();
  });

  it('opens a journal of schema version 3 (before results): its jobs have none, new results are kept', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const old = queue.submit('t', 'old');
    queue.complete(old, mustPollSync(queue, old).token);
    const next = queue.submit('t', 'new');
    closeJournal(queue);
    // What leasehold wrote before this schema: no result column (nor the later key and headers columns), user_version 3.
    const db = new Database(path);
    downgradeToSchema3(db);
    db.close();

    const migrated = open(path, clock);
    expect(migrated.view(old)).toMatchObject({ status: 'SUCCEEDED', result: undefined });
    migrated.complete(next, mustPollSync(migrated, next).token, ['kept']);
    closeJournal(migrated);
    const check = new Database(path, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    check.close();
    expect(open(path, clock).view(next).result).toEqual(['kept']);
  });

  it('refuses a journal whose result is not JSON, as a damaged row, and leaves it as it was', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const id = queue.submit('t');
    queue.complete(id, mustPollSync(queue, id).token, 'fine');
    closeJournal(queue);
    const db = new Database(path);
    db.prepare("UPDATE jobs SET result = '{not json' WHERE num = 1").run();
    db.close();
    expect(() => open(path, clock)).toThrow(/damaged job row J1: a result that is not the JSON of a SUCCEEDED job/);
  });
});
