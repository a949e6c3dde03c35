/**
 * The journal benchmarks' raw-SQLite baseline (bench/raw-sqlite.ts) writes
 * rows into a copy of the journal's own jobs table, and refuses to run when
 * that table has a column it does not fill: each new journal column must be
 * given a value there, or `npm run bench` stops at the journal suites.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { RetryPolicy, systemClock } from '../../dist/index.js';
import { jobsTableSql, rawInsert, rawTable, rowCount } from '../../bench/raw-sqlite.js';
import { closeJournal, openJournal, tempDir, tempJournal } from '../support/journal-harness.js';

it("fills every column of the journal's jobs table, as a journal of this leasehold makes it", () => {
  const path = tempJournal();
  closeJournal(openJournal(path, systemClock, new RetryPolicy(1, 0, 0)));
  const db = rawTable(join(tempDir(), 'raw.db'), jobsTableSql(path));
  try {
    const insert = rawInsert(db);
    insert();
    insert();
    expect(rowCount(db)).toBe(2);
  } finally {
    db.close();
  }
});
