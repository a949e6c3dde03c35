/**
 * Suite "journal": what the SQLite journal costs. Every case writes to its own
 * fresh file under os.tmpdir() (WAL, synchronous NORMAL), all in this process,
 * and the files are deleted afterwards.
 *
 * Baseline: better-sqlite3 alone, one INSERT of a job-shaped row per
 * transaction (autocommit), into a table made from the very `CREATE TABLE
 * jobs` that leasehold's journal holds, so the rows have the same columns.
 * Then leasehold's submit (one transaction per job), submitMany (one per 100
 * jobs) and a job's whole life (submit, poll, complete).
 *
 * BullMQ needs a Redis server, which this run does not start: its figure is a
 * constant, measured earlier on this machine, shown for comparison only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Bench } from 'tinybench';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { BENCH_TIME, MiB } from './conditions.js';
import { type Rates, type Row, type Suite, formatRate, formatRatio, opsPerSecond, tinybenchRows } from './report.js';

// Nothing is evicted: submitMany keeps every job it submits pending, ~0.4M in a full run here, so there is room for twice that.
const OPTIONS = { synchronous: 'NORMAL', capacity: 1 << 21, arenaBytes: 256 * MiB } as const;
const BATCH = 100;
const LEASE_MILLIS = 30_000;
/** BullMQ end to end (add → worker → completed), jobs/s, measured earlier on this machine: not in this run. */
const BULLMQ = { low: 12_000, high: 17_000 } as const;

const CASES = {
  raw: 'raw better-sqlite3 insert, one row per transaction (baseline)',
  submit: 'leasehold durable submit, one by one',
  many: `leasehold submitMany, ${BATCH} per call`,
  life: 'leasehold durable lifecycle: submit → poll → complete',
} as const;
const BULLMQ_ROW = `BullMQ end to end, ${formatRate(BULLMQ.low)}–${formatRate(BULLMQ.high)} jobs/s: measured earlier on this machine, not in this run`;

export const journal: Suite = {
  id: 'journal',
  title: 'durable journal (SQLite, WAL, synchronous NORMAL)',
  config: {
    'journal: files': 'one fresh SQLite file per case under os.tmpdir(), WAL, synchronous NORMAL; deleted afterwards',
    'journal: leasehold capacity': OPTIONS.capacity,
    'journal: leasehold arenaBytes': OPTIONS.arenaBytes,
    'journal: eviction': 'none: capacity holds every job a case submits (checked after the run)',
    'journal: payload': '"x" (1 byte), type "noop", priority 0',
    'journal: baseline': 'better-sqlite3 prepared INSERT, autocommit, into a copy of the journal\'s jobs table (same columns, no meta row)',
    'journal: submitMany': `${BATCH} jobs per call, one transaction; jobs/s = ${BATCH} x calls/s`,
    'journal: lifecycle': 'submit + poll + complete per iteration, each journaled as JobQueue does it (see src/journal/journal.ts for what commits when)',
    'journal: BullMQ': `${formatRate(BULLMQ.low)}–${formatRate(BULLMQ.high)} jobs/s end to end, measured earlier on this machine (needs Redis; not run here)`,
  },
  async run() {
    const dir = mkdtempSync(join(os.tmpdir(), 'leasehold-bench-journal-'));
    const queues: JobQueue[] = [];
    let raw: Database.Database | undefined;
    try {
      const open = (name: string) => {
        const queue = JobQueue.open(join(dir, `${name}.sqlite`), systemClock, new RetryPolicy(3, 100, 1_000), OPTIONS);
        queues.push(queue);
        return queue;
      };
      const single = open('submit');
      const batched = open('submit-many');
      const life = open('lifecycle');
      raw = rawTable(join(dir, 'raw.sqlite'), jobsTableSql(join(dir, 'submit.sqlite')));

      const insert = rawInsert(raw);
      const jobs = Array.from({ length: BATCH }, () => ({ type: 'noop', payload: 'x' }));
      const counts = { submit: 0, many: 0, life: 0 };

      const bench = new Bench({ ...BENCH_TIME, throws: true });
      bench.add(CASES.raw, () => insert());
      bench.add(CASES.submit, () => {
        single.submit('noop', 'x');
        counts.submit++;
      });
      bench.add(CASES.many, () => {
        batched.submitMany(jobs);
        counts.many += BATCH;
      });
      bench.add(CASES.life, () => {
        life.submit('noop', 'x');
        const lease = life.poll('bench', LEASE_MILLIS);
        if (lease === undefined) throw new Error('poll found nothing right after a submit');
        life.complete(lease.jobId, lease.token);
        counts.life++;
      });
      await bench.run();

      const [rawOps, submitOps, manyCalls, lifeOps] = bench.tasks.map(opsPerSecond) as [Rates, Rates, Rates, Rates];
      const manyOps: Rates = { mean: manyCalls.mean * BATCH, median: manyCalls.median * BATCH };

      const notes = [
        ...check('submit', single, { pending: counts.submit }),
        ...check('submitMany', batched, { pending: counts.many }),
        ...check('lifecycle', life, { succeeded: counts.life }),
      ];
      const rawRows = (raw.prepare('SELECT COUNT(*) AS n FROM jobs').get() as { n: number }).n;
      notes.push(
        `jobs written: raw ${rawRows.toLocaleString('en-US')} rows, submit ${counts.submit.toLocaleString('en-US')}, ` +
          `submitMany ${counts.many.toLocaleString('en-US')}, lifecycle ${counts.life.toLocaleString('en-US')} (warmup included); capacity ${OPTIONS.capacity.toLocaleString('en-US')}`,
        `the BullMQ row (${formatRate(BULLMQ.low)}–${formatRate(BULLMQ.high)} jobs/s) was not measured in this run: BullMQ needs a Redis server, not run here; its ratio uses the upper figure, ${formatRate(BULLMQ.high)}`,
      );

      const row = (name: string, rates: Rates, unit: string): Row => ({
        case: name,
        [unit]: formatRate(rates.mean),
        [`${unit} at median`]: formatRate(rates.median),
      });
      return {
        tables: [
          { title: 'tinybench (one row per iteration; submitMany: one call of 100 jobs)', rows: tinybenchRows(bench) },
          {
            title: 'submit vs raw SQLite (jobs/s = 1 / mean latency; at median = 1 / median latency)',
            rows: [
              { ...row(CASES.raw, rawOps, 'jobs/s'), 'vs raw': formatRatio(1), 'vs raw at median': formatRatio(1) },
              {
                ...row(CASES.submit, submitOps, 'jobs/s'),
                'vs raw': formatRatio(submitOps.mean / rawOps.mean),
                'vs raw at median': formatRatio(submitOps.median / rawOps.median),
              },
              {
                ...row(CASES.many, manyOps, 'jobs/s'),
                'vs raw': formatRatio(manyOps.mean / rawOps.mean),
                'vs raw at median': formatRatio(manyOps.median / rawOps.median),
              },
            ],
          },
          {
            title: 'submitMany vs submit one by one (jobs/s)',
            rows: [
              { ...row(CASES.submit, submitOps, 'jobs/s'), 'calls/s': formatRate(submitOps.mean), 'vs one by one': formatRatio(1) },
              {
                ...row(CASES.many, manyOps, 'jobs/s'),
                'calls/s': formatRate(manyCalls.mean),
                'vs one by one': formatRatio(manyOps.mean / submitOps.mean),
              },
            ],
          },
          {
            title: 'lifecycle vs BullMQ (jobs/s; the BullMQ row is a constant, not measured in this run)',
            rows: [
              { ...row(CASES.life, lifeOps, 'jobs/s'), [`vs BullMQ ${formatRate(BULLMQ.high)}`]: formatRatio(lifeOps.mean / BULLMQ.high) },
              { case: BULLMQ_ROW, 'jobs/s': `${formatRate(BULLMQ.low)}–${formatRate(BULLMQ.high)}`, 'jobs/s at median': '-', [`vs BullMQ ${formatRate(BULLMQ.high)}`]: formatRatio(1) },
            ],
          },
        ],
        unit: 'jobs/s (1 / mean latency; submitMany: 100 x calls/s)',
        bars: [
          { label: 'raw better-sqlite3 insert (baseline)', value: rawOps.mean, baseline: true },
          { label: 'leasehold submit, one by one', value: submitOps.mean },
          { label: `leasehold submitMany, ${BATCH} per call`, value: manyOps.mean },
          { label: 'leasehold submit → poll → complete', value: lifeOps.mean },
          { label: 'BullMQ e2e, earlier (not this run)', value: BULLMQ.high, baseline: true },
        ],
        ratios: {
          'submit / raw insert (mean)': submitOps.mean / rawOps.mean,
          'submit / raw insert (median)': submitOps.median / rawOps.median,
          'submitMany / submit, jobs/s (mean)': manyOps.mean / submitOps.mean,
          [`lifecycle / BullMQ ${formatRate(BULLMQ.high)}, not this run (mean)`]: lifeOps.mean / BULLMQ.high,
          [`lifecycle / BullMQ ${formatRate(BULLMQ.high)}, not this run (median)`]: lifeOps.median / BULLMQ.high,
        },
        notes,
      };
    } finally {
      for (const queue of queues) queue.close();
      raw?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/** The `CREATE TABLE jobs` statement of a leasehold journal, read through a connection of its own. */
function jobsTableSql(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'").get() as { sql: string } | undefined;
    if (row === undefined) throw new Error(`${path} has no jobs table`);
    return row.sql;
  } finally {
    db.close();
  }
}

function rawTable(path: string, createJobs: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(createJobs);
  return db;
}

/** One INSERT of a freshly submitted job's row per call, each its own (autocommit) transaction. */
function rawInsert(db: Database.Database): () => void {
  const values: Record<string, string | number | null> = {
    type: 'noop', payload: 'x', priority: 0, status: 'PENDING', attempts: 0, run_at: 0, last_error: null,
    token: 0, lease_until: 0, finish_seq: 0, worker_id: null, moves: 1,
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
    statement.run(row);
  };
}

/** Notes if a queue does not hold what its case put in, e.g. jobs evicted. */
function check(name: string, queue: JobQueue, expected: { pending?: number; succeeded?: number }): string[] {
  const stats = queue.stats();
  const pending = expected.pending ?? 0;
  const succeeded = expected.succeeded ?? 0;
  if (stats.pending === pending && stats.succeeded === succeeded && stats.running === 0 && stats.dead === 0) return [];
  return [`${name} queue holds ${JSON.stringify(stats)} after the run; expected ${pending} pending, ${succeeded} succeeded`];
}
