/**
 * Suite "journal": what the SQLite journal costs. Every case writes to its own
 * fresh file under os.tmpdir() (WAL, synchronous NORMAL), all in this process,
 * and the files are deleted afterwards.
 *
 * Baseline: better-sqlite3 alone, one INSERT of a job-shaped row per
 * transaction (autocommit), into a table made from the very `CREATE TABLE
 * jobs` that leasehold's journal holds, so the rows have the same columns.
 * Then leasehold's submit (one transaction per job), submitMany (one per 100
 * jobs) and a job's whole life (submit, poll, complete), one by one and
 * batched (submitMany of 100, then 100 polls and completes).
 *
 * Beside the lifecycles: BullMQ end to end (add → Worker → completed),
 * measured in this run, before the leasehold cases, on a private redis-server
 * (AOF fsynced on every write) by the very function and load of the redis
 * suite (bench/redis.ts). Without a redis-server binary it is not measured,
 * and the tables say so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Bench } from 'tinybench';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { BULLMQ_VERSION } from './bullmq.js';
import { BENCH_TIME, MiB } from './conditions.js';
import { LOAD, measureBullmqEndToEnd } from './redis.js';
import type { AppendFsync } from './redis-server.js';

/**
 * BullMQ's Redis for this comparison fsyncs its AOF once a second, as Redis
 * recommends: like SQLite's synchronous NORMAL, a crash of the client process
 * loses nothing acknowledged, and neither pays an fsync per write.
 */
const BULLMQ_APPENDFSYNC: AppendFsync = 'everysec';
import { redisMissing } from './redis-server.js';
import { type Rates, type Row, type Suite, formatRate, formatRatio, median, opsPerSecond, tinybenchRows } from './report.js';

// Nothing is evicted: submitMany keeps every job it submits pending, ~0.4M in a full run here, so there is room for twice that.
const OPTIONS = { synchronous: 'NORMAL', capacity: 1 << 21, arenaBytes: 256 * MiB } as const;
const BATCH = 100;
const LEASE_MILLIS = 30_000;

const CASES = {
  raw: 'raw better-sqlite3 insert, one row per transaction (baseline)',
  submit: 'leasehold durable submit, one by one',
  many: `leasehold submitMany, ${BATCH} per call`,
  life: 'leasehold durable lifecycle: submit → poll → complete',
  batchedLife: `leasehold durable lifecycle, batched: submitMany(${BATCH}) → ${BATCH} × (poll → complete)`,
} as const;
const BULLMQ_CASE = `BullMQ ${BULLMQ_VERSION} end to end (add → Worker → completed), measured in this run`;

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
    'journal: lifecycle, batched': `submitMany of ${BATCH} jobs, then ${BATCH} x (poll + complete) per iteration; jobs/s = ${BATCH} x iterations/s`,
    'journal: BullMQ': `${BULLMQ_VERSION} end to end, measured in this run before the leasehold cases, as the redis suite measures it: private redis-server, appendfsync ${BULLMQ_APPENDFSYNC}; ${LOAD.jobs} no-op jobs per run, Worker concurrency ${LOAD.concurrency}, addBulk of ${LOAD.batch}; median of the timed runs`,
  },
  async run() {
    const missing = redisMissing();
    const bullmq = missing === null ? await measureBullmqEndToEnd(BULLMQ_APPENDFSYNC) : undefined;
    const bullmqRate = bullmq === undefined ? undefined : median(bullmq.rates);
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
      const batchedLife = open('lifecycle-batched');
      raw = rawTable(join(dir, 'raw.sqlite'), jobsTableSql(join(dir, 'submit.sqlite')));

      const insert = rawInsert(raw);
      const jobs = Array.from({ length: BATCH }, () => ({ type: 'noop', payload: 'x' }));
      const counts = { submit: 0, many: 0, life: 0, batchedLife: 0 };

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
      bench.add(CASES.batchedLife, () => {
        batchedLife.submitMany(jobs);
        for (let i = 0; i < BATCH; i++) {
          const lease = batchedLife.poll('bench', LEASE_MILLIS);
          if (lease === undefined) throw new Error(`poll found nothing with ${BATCH - i} of a batch still pending`);
          batchedLife.complete(lease.jobId, lease.token);
        }
        counts.batchedLife += BATCH;
      });
      await bench.run();

      const [rawOps, submitOps, manyCalls, lifeOps, batchedLifeCalls] = bench.tasks.map(opsPerSecond) as [Rates, Rates, Rates, Rates, Rates];
      const manyOps: Rates = { mean: manyCalls.mean * BATCH, median: manyCalls.median * BATCH };
      const batchedLifeOps: Rates = { mean: batchedLifeCalls.mean * BATCH, median: batchedLifeCalls.median * BATCH };

      const notes = [
        ...check('submit', single, { pending: counts.submit }),
        ...check('submitMany', batched, { pending: counts.many }),
        ...check('lifecycle', life, { succeeded: counts.life }),
        ...check('batched lifecycle', batchedLife, { succeeded: counts.batchedLife }),
      ];
      const rawRows = (raw.prepare('SELECT COUNT(*) AS n FROM jobs').get() as { n: number }).n;
      notes.push(
        `jobs written: raw ${rawRows.toLocaleString('en-US')} rows, submit ${counts.submit.toLocaleString('en-US')}, ` +
          `submitMany ${counts.many.toLocaleString('en-US')}, lifecycle ${counts.life.toLocaleString('en-US')}, ` +
          `batched lifecycle ${counts.batchedLife.toLocaleString('en-US')} (warmup included); capacity ${OPTIONS.capacity.toLocaleString('en-US')}`,
        bullmq === undefined
          ? `BullMQ was NOT measured in this run, so the lifecycles have nothing to be compared with: ${missing}`
          : `BullMQ end to end measured in this run: ${bullmq.rates.map(formatRate).join(', ')} jobs/s (median ${formatRate(bullmqRate!)}) under ${bullmq.settings}`,
        `not the same durability: the leasehold lifecycles run in one thread, one call at a time, on SQLite in WAL mode with synchronous NORMAL (a commit survives a crash of the process, not necessarily of the machine); BullMQ runs ${LOAD.concurrency} jobs at once on Redis with appendfsync ${BULLMQ_APPENDFSYNC} (fsynced once a second; a crash of Redis may lose the last second)`,
      );

      const versus = bullmqRate === undefined ? 'vs BullMQ (not measured)' : `vs BullMQ ${formatRate(bullmqRate)}`;
      const vsBullmq = (rates: Rates) => (bullmqRate === undefined ? '-' : formatRatio(rates.mean / bullmqRate));
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
            title: `lifecycle vs BullMQ end to end (jobs/s; leasehold: 1 / mean latency; BullMQ: median of its timed runs, measured in this run${bullmq === undefined ? ' — NOT MEASURED: no redis-server' : ''})`,
            rows: [
              { ...row(CASES.life, lifeOps, 'jobs/s'), [versus]: vsBullmq(lifeOps) },
              { ...row(CASES.batchedLife, batchedLifeOps, 'jobs/s'), [versus]: vsBullmq(batchedLifeOps) },
              bullmqRate === undefined
                ? { case: `${BULLMQ_CASE}: not measured, no redis-server`, 'jobs/s': '-', 'jobs/s at median': '-', [versus]: '-' }
                : { case: BULLMQ_CASE, 'jobs/s': formatRate(bullmqRate), 'jobs/s at median': '-', [versus]: formatRatio(1) },
            ],
          },
        ],
        unit: 'jobs/s (1 / mean latency; submitMany: 100 x calls/s)',
        bars: [
          { label: 'raw better-sqlite3 insert (baseline)', value: rawOps.mean, baseline: true },
          { label: 'leasehold submit, one by one', value: submitOps.mean },
          { label: `leasehold submitMany, ${BATCH} per call`, value: manyOps.mean },
          { label: 'leasehold submit → poll → complete', value: lifeOps.mean },
          { label: `leasehold lifecycle, batched ${BATCH}`, value: batchedLifeOps.mean },
          ...(bullmqRate === undefined ? [] : [{ label: 'BullMQ end to end (this run)', value: bullmqRate, baseline: true }]),
        ],
        ratios: {
          'submit / raw insert (mean)': submitOps.mean / rawOps.mean,
          'submit / raw insert (median)': submitOps.median / rawOps.median,
          'submitMany / submit, jobs/s (mean)': manyOps.mean / submitOps.mean,
          ...(bullmqRate === undefined
            ? {}
            : {
                'lifecycle / BullMQ end to end (mean)': lifeOps.mean / bullmqRate,
                'lifecycle / BullMQ end to end (median)': lifeOps.median / bullmqRate,
                'batched lifecycle / BullMQ end to end (mean)': batchedLifeOps.mean / bullmqRate,
                'batched lifecycle / BullMQ end to end (median)': batchedLifeOps.median / bullmqRate,
              }),
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
