/**
 * The journal suites' baselines: better-sqlite3 alone, writing job-shaped rows
 * under the journal's pragmas (WAL, synchronous NORMAL), into a table made
 * from the very `CREATE TABLE jobs` that leasehold's journal holds, or into
 * the minimal table a user would write for a queue of their own.
 */
import Database from 'better-sqlite3';

/** The `CREATE TABLE jobs` statement of a leasehold journal, read through a connection of its own. */
export function jobsTableSql(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'").get() as { sql: string } | undefined;
    if (row === undefined) throw new Error(`${path} has no jobs table`);
    return row.sql;
  } finally {
    db.close();
  }
}

/** A fresh database at `path` in WAL mode with synchronous NORMAL, holding a jobs table made by `createJobs`. */
export function rawTable(path: string, createJobs: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(createJobs);
  return db;
}

/** One INSERT of a freshly submitted job's row per call, each its own (autocommit) transaction. */
export function rawInsert(db: Database.Database): () => void {
  const values: Record<string, string | number | null> = {
    type: 'noop', payload: 'x', priority: 0, status: 'PENDING', attempts: 0, run_at: 0, last_error: null,
    token: 0, lease_until: 0, finish_seq: 0, worker_id: null, moves: 1, max_attempts: 0, result: null, idem_key: null, key_ttl: 0, finished_at: null,
    timeout_millis: 0, headers: null, submitted_at: 0, started_at: null, progress: null, group_name: null, flow_parent: 0, waiting_children: 0,
  };
  const columns = (db.pragma('table_info(jobs)') as { name: string }[]).map((column) => column.name).filter((name) => name !== 'num');
  const unknown = columns.filter((name) => !(name in values));
  if (unknown.length > 0) throw new Error(`the journal's jobs table has columns this baseline does not fill: ${unknown.join(', ')}`);
  const statement = db.prepare(`INSERT INTO jobs (num, ${columns.join(', ')}) VALUES (@num, ${columns.map((name) => `@${name}`).join(', ')})`);
  const row: Record<string, string | number | null> = { num: 0 };
  for (const name of columns) row[name] = values[name]!;
  return () => {
    row['num'] = (row['num'] as number) + 1;
    row['run_at'] = Date.now();
    row['submitted_at'] = row['run_at'];
    statement.run(row);
  };
}

/**
 * The jobs table a user would write for a queue of their own: the columns a
 * job needs to be polled and retried, no index beyond the key.
 */
export const MINIMAL_JOBS_TABLE = `CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL,
  run_at INTEGER NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL
)`;

/** One INSERT of a freshly submitted job into MINIMAL_JOBS_TABLE per call, each its own (autocommit) transaction. */
export function minimalInsert(db: Database.Database): () => void {
  const statement = db.prepare("INSERT INTO jobs (type, payload, priority, run_at, status, attempts) VALUES (?, ?, 0, ?, 'PENDING', 0)");
  return () => void statement.run('noop', 'x', Date.now());
}

/** Rows in the table, to report what a case wrote. */
export function rowCount(db: Database.Database): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM jobs').get() as { n: number }).n;
}
