/**
 * Suite "journal-submit": what a durable submit costs against SQLite alone.
 * Every case writes to its own fresh file (journal-files.ts), WAL with
 * synchronous NORMAL, all in this process and this run.
 *
 * Baselines: better-sqlite3 alone, one INSERT of a job-shaped row per
 * transaction (autocommit), into the minimal table a user would write (type,
 * payload, priority, run_at, status, attempts), and into a table made from
 * the very `CREATE TABLE jobs` that leasehold's journal holds (raw-sqlite.ts).
 * Against them: leasehold's `submit` on a `JobQueue.open` journal, one
 * transaction per job, and `submitMany`, one per BATCH jobs.
 *
 * The cases take turns: ROUNDS rounds, each running every case for its share
 * of the time budget, so that a busy spell of the machine (a checkpoint of
 * the page cache, another process) falls on all of them rather than on the
 * one that happened to run then. A case's rate pools its rounds.
 */
import { BENCH_TIME, QUICK } from './conditions.js';
import { checkHolds, journalFiles, journalSettings } from './journal-files.js';
import { MINIMAL_JOBS_TABLE, jobsTableSql, minimalInsert, rawInsert, rawTable, rowCount } from './raw-sqlite.js';
import { type Rates, type Row, type Suite, atLeast, formatRate, formatRatio } from './report.js';
import { interleavedBenches, pooledRates } from './rounds.js';

const BATCH = 100;
const ROUNDS = QUICK ? 1 : 4;

const CASES = {
  minimal: "raw better-sqlite3 insert into a user's minimal table, one row per transaction (baseline)",
  raw: "raw better-sqlite3 insert into the journal's own table, one row per transaction (baseline)",
  submit: 'leasehold durable submit, one by one',
  many: `leasehold submitMany, ${BATCH} per call`,
} as const;

export const journalSubmit: Suite = {
  id: 'journal-submit',
  title: 'journal submit: durable submit vs raw better-sqlite3 (WAL, synchronous NORMAL)',
  config: {
    ...journalSettings('journal-submit'),
    'journal-submit: baselines': "better-sqlite3 prepared INSERT, autocommit, into a minimal jobs table (id, type, payload, priority, run_at, status, attempts; no index) and into a copy of the journal's jobs table (same columns, no meta row)",
    'journal-submit: submitMany': `${BATCH} jobs per call, one transaction; jobs/s = ${BATCH} x calls/s`,
    'journal-submit: rounds': `${ROUNDS} rounds, each running every case in turn for 1/${ROUNDS} of the tinybench budget; rates pool the rounds`,
  },
  async run() {
    const files = journalFiles('submit');
    try {
      const single = files.open('submit');
      const batched = files.open('submit-many');
      const raw = rawTable(files.path('raw'), jobsTableSql(files.path('submit')));
      const minimal = rawTable(files.path('minimal'), MINIMAL_JOBS_TABLE);
      try {
        const insert = rawInsert(raw);
        const insertMinimal = minimalInsert(minimal);
        const jobs = Array.from({ length: BATCH }, () => ({ type: 'noop', payload: 'x' }));
        const counts = { submit: 0, many: 0 };
        const rounds = await interleavedBenches(ROUNDS, BENCH_TIME, (bench) => {
          bench.add(CASES.minimal, () => insertMinimal());
          bench.add(CASES.raw, () => insert());
          bench.add(CASES.submit, () => {
            single.submit('noop', 'x');
            counts.submit++;
          });
          bench.add(CASES.many, () => {
            batched.submitMany(jobs);
            counts.many += BATCH;
          });
        });

        const [minimalOps, rawOps, submitOps, manyCalls] = rounds.cases.map(pooledRates) as [Rates, Rates, Rates, Rates];
        const manyOps: Rates = { mean: manyCalls.mean * BATCH, median: manyCalls.median * BATCH };
        const notes = [
          ...checkHolds('submit', single, { pending: counts.submit }),
          ...checkHolds('submitMany', batched, { pending: counts.many }),
          `jobs written: minimal table ${rowCount(minimal).toLocaleString('en-US')} rows, journal's table ${rowCount(raw).toLocaleString('en-US')} rows, submit ${counts.submit.toLocaleString('en-US')}, ` +
            `submitMany ${counts.many.toLocaleString('en-US')} (warmup included)`,
        ];
        const row = (name: string, rates: Rates): Row => ({
          case: name,
          'jobs/s': formatRate(rates.mean),
          'vs minimal table': formatRatio(rates.mean / minimalOps.mean),
          "vs journal's table": formatRatio(rates.mean / rawOps.mean),
          'jobs/s at median': formatRate(rates.median),
          'vs minimal table at median': formatRatio(rates.median / minimalOps.median),
        });
        return {
          tables: [
            { title: `tinybench, by round (one row per call; submitMany: one call of ${BATCH} jobs)`, rows: rounds.rows },
            {
              title: `submit vs raw SQLite, ${ROUNDS} rounds pooled (jobs/s = 1 / mean latency; at median = 1 / median of the rounds' median latencies)`,
              rows: [row(CASES.minimal, minimalOps), row(CASES.raw, rawOps), row(CASES.submit, submitOps), row(CASES.many, manyOps)],
            },
          ],
          unit: 'jobs/s (1 / mean latency; submitMany: 100 x calls/s)',
          bars: [
            { label: 'raw better-sqlite3 insert, minimal table (baseline)', value: minimalOps.mean, baseline: true },
            { label: "raw better-sqlite3 insert, journal's table (baseline)", value: rawOps.mean, baseline: true },
            { label: 'leasehold submit, one by one', value: submitOps.mean },
            { label: `leasehold submitMany, ${BATCH} per call`, value: manyOps.mean },
          ],
          ratios: {
            'submit / raw insert, minimal table (median)': submitOps.median / minimalOps.median,
            "submit / raw insert, journal's table (median)": submitOps.median / rawOps.median,
            'submitMany / submit, jobs/s (mean)': manyOps.mean / submitOps.mean,
          },
          targets: [
            atLeast("durable submit one by one / raw better-sqlite3 INSERT into a user's minimal table (mean)", submitOps.mean / minimalOps.mean, 0.8),
            atLeast("durable submit one by one / raw better-sqlite3 INSERT into the journal's table (mean)", submitOps.mean / rawOps.mean, 0.8),
          ],
          notes,
        };
      } finally {
        raw.close();
        minimal.close();
      }
    } finally {
      files.close();
    }
  },
};
