/**
 * Edits of a PENDING job and a snooze on a journal: each is in the journal
 * when its call returns (read straight from the file while the queue is
 * open), a reopen brings back the job as edited, and a refused edit leaves
 * the journal as it was. A failed write undoes an edit: journal-disk-full.test.ts.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { IllegalStateError, type JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, expectErrorSync, mustPollSync } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

interface Row {
  payload: string;
  priority: number;
  status: string;
  attempts: number;
  run_at: number;
}

/** The row of job Jn as the journal file holds it now (a second connection: only what was committed). */
function row(path: string, num: number): Row {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT payload, priority, status, attempts, run_at FROM jobs WHERE num = ?').get(num) as Row;
  } finally {
    db.close();
  }
}

const open = (path: string, clock: ManualClock): JobQueue => openJournal(path, clock, new RetryPolicy(3, 100, 10_000));

describe('edits of a PENDING job on a journal', () => {
  it('are each in the journal when the call returns, and a reopen brings the job back as edited', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = open(path, clock);
    const id = queue.submit('t', 'first', 0, T0 + 60_000); // J1
    queue.submit('t', 'other', 5); // J2
    queue.changePriority(id, 7);
    expect(row(path, 1)).toMatchObject({ priority: 7, payload: 'first', run_at: T0 + 60_000 });
    queue.updatePayload(id, 'second');
    expect(row(path, 1)).toMatchObject({ priority: 7, payload: 'second' });
    clock.advance(10);
    queue.changeDelay(id, 500);
    expect(row(path, 1)).toMatchObject({ run_at: T0 + 510, status: 'PENDING' });
    queue.promote(id);
    expect(row(path, 1)).toMatchObject({ run_at: T0 + 10, priority: 7, payload: 'second' });
    const edited = { ...queue.view(id) };
    closeJournal(queue);
    queue = open(path, clock);
    expect({ ...queue.view(id) }).toEqual(edited);
    // Priority 7 comes before J2's 5.
    expect(mustPollSync(queue, id).payload).toBe('second');
  });

  it('keeps a snooze across a reopen: delayed, the attempt not counted', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = open(path, clock);
    const id = queue.submit('t', 'p');
    queue.release(id, mustPollSync(queue, id).token, { delayMillis: 2_000 });
    expect(row(path, 1)).toMatchObject({ status: 'PENDING', attempts: 0, run_at: T0 + 2_000 });
    closeJournal(queue);
    queue = open(path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, nextRunAt: T0 + 2_000 });
    expect(queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(2_000);
    expect(mustPollSync(queue, id).attempt).toBe(1);
  });

  it('leaves the journal as it was after a refused edit, also after a reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = open(path, clock);
    const id = queue.submit('t', 'p', 3);
    const lease = mustPollSync(queue, id);
    queue.flush();
    const before = row(path, 1);
    for (const edit of [() => queue.changePriority(id, 1), () => queue.changeDelay(id, 9), () => queue.promote(id), () => queue.updatePayload(id, 'q')]) {
      expectErrorSync(edit, IllegalStateError, 'ERR_ILLEGAL_STATE');
    }
    queue.flush();
    expect(row(path, 1)).toEqual(before);
    queue.complete(id, lease.token);
    closeJournal(queue);
    queue = open(path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', payload: 'p', priority: 3 });
  });
});
