/**
 * The journal's schema, as numbered migrations. Append only: a released
 * migration is never edited; `PRAGMA user_version` is the number of the last
 * one applied.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: one row per job, and the sequences that must never go back.
  `CREATE TABLE jobs (
     num INTEGER PRIMARY KEY,
     type TEXT NOT NULL,
     payload TEXT NOT NULL,
     priority REAL NOT NULL,
     status TEXT NOT NULL,
     attempts INTEGER NOT NULL,
     run_at REAL NOT NULL,
     last_error TEXT,
     token REAL NOT NULL,
     lease_until REAL NOT NULL,
     finish_seq REAL NOT NULL
   );
   CREATE TABLE meta (key TEXT PRIMARY KEY, value REAL NOT NULL);`,
  // 2: the worker of each job's latest lease, and the count of its moves, which
  // orders writes grouped by different threads.
  `ALTER TABLE jobs ADD COLUMN worker_id TEXT;
   ALTER TABLE jobs ADD COLUMN moves INTEGER NOT NULL DEFAULT 0;`,
  // 3: a job's own maxAttempts (submit's option); 0, as every older job has, for the policy's.
  `ALTER TABLE jobs ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 0;`,
  // 4: a SUCCEEDED job's result, as JSON text (complete's \`result\`); NULL, as every older job has, for none.
  `ALTER TABLE jobs ADD COLUMN result TEXT;`,
  // 5: a job's idempotent key (submit's option; NULL: none), how long it stays taken after the job
  // finished, when a keyed job last finished, and the job's own lease length (0: the poll's). The
  // index is not unique: a key is free again once its job finished, while that job's row stays.
  `ALTER TABLE jobs ADD COLUMN idem_key TEXT;
   ALTER TABLE jobs ADD COLUMN key_ttl REAL NOT NULL DEFAULT 0;
   ALTER TABLE jobs ADD COLUMN finished_at REAL NOT NULL DEFAULT 0;
   ALTER TABLE jobs ADD COLUMN timeout_millis INTEGER NOT NULL DEFAULT 0;
   CREATE INDEX jobs_by_key ON jobs (idem_key) WHERE idem_key IS NOT NULL;`,
  // 6: repeatable jobs (JobQueue#schedule): each schedule's definition (JSON) and the next tick not yet fired (NULL: none left).
  `CREATE TABLE schedules (name TEXT PRIMARY KEY, spec TEXT NOT NULL, next_tick REAL);`,
  // 7: a job's headers, as the JSON text of an object of strings (submit's \`headers\`); NULL, as every older job has, for none.
  `ALTER TABLE jobs ADD COLUMN headers TEXT;`,
  // 8: a job's times (JobView's submittedAt, startedAt, finishedAt), NULL where unknown. finished_at
  // becomes every finished job's and nullable: only a keyed job's was kept before, so an older row
  // keeps it only if keyed and finished; jobs of older journals have no submitted_at or started_at.
  `ALTER TABLE jobs ADD COLUMN submitted_at REAL;
   ALTER TABLE jobs ADD COLUMN started_at REAL;
   ALTER TABLE jobs ADD COLUMN finished REAL;
   UPDATE jobs SET finished = finished_at WHERE idem_key IS NOT NULL AND status IN ('SUCCEEDED', 'DEAD', 'CANCELLED');
   ALTER TABLE jobs DROP COLUMN finished_at;
   ALTER TABLE jobs RENAME COLUMN finished TO finished_at;`,
  // 9: the progress a job's latest lease reported (JobQueue#progress); NULL, as every older job has, for none.
  `ALTER TABLE jobs ADD COLUMN progress REAL;`,
  // 10: a job's group (submit's \`group\`); NULL, as every older job has, for none.
  `ALTER TABLE jobs ADD COLUMN group_name TEXT;`,
  // 11: flows (submitFlow): a child's parent (its job number, negative when the parent's onChildFailure
  // is 'ignore'; 0, as every older job has, for none) and a parent's children not yet ended (0: none).
  `ALTER TABLE jobs ADD COLUMN flow_parent INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE jobs ADD COLUMN waiting_children INTEGER NOT NULL DEFAULT 0;`,
];
