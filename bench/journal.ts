/**
 * Suite "journal": a durable job's whole life on the SQLite journal (WAL,
 * synchronous NORMAL), one by one (submit, poll, complete) and batched
 * (submitMany of 100, then 100 polls and completes), each case on its own
 * fresh file (journal-files.ts). What a submit alone costs against raw SQLite
 * is the "journal-submit" suite.
 *
 * Beside the lifecycles: BullMQ end to end (add → Worker → completed),
 * measured in this run, before the leasehold cases, on a private redis-server
 * by the very function and load of the redis suite (bench/redis.ts). Without
 * a redis-server binary it is not measured, and the tables say so.
 */
import { Bench } from 'tinybench';
import { BULLMQ_VERSION } from './bullmq.js';
import { BENCH_TIME } from './conditions.js';
import { checkHolds, journalFiles, journalSettings } from './journal-files.js';
import { LOAD, measureBullmqEndToEnd } from './redis.js';
import { type AppendFsync, redisMissing } from './redis-server.js';
import { type Rates, type Row, type Suite, formatRate, formatRatio, median, opsPerSecond, tinybenchRows } from './report.js';

/**
 * BullMQ's Redis for this comparison fsyncs its AOF once a second, as Redis
 * recommends: like SQLite's synchronous NORMAL, a crash of the client process
 * loses nothing acknowledged, and neither pays an fsync per write.
 */
const BULLMQ_APPENDFSYNC: AppendFsync = 'everysec';
const BATCH = 100;
const LEASE_MILLIS = 30_000;

const CASES = {
  life: 'leasehold durable lifecycle: submit → poll → complete',
  batchedLife: `leasehold durable lifecycle, batched: submitMany(${BATCH}) → ${BATCH} × (poll → complete)`,
} as const;
const BULLMQ_CASE = `BullMQ ${BULLMQ_VERSION} end to end (add → Worker → completed), measured in this run`;

export const journal: Suite = {
  id: 'journal',
  title: 'journal lifecycle: durable submit → poll → complete (SQLite, WAL, synchronous NORMAL) vs BullMQ',
  config: {
    ...journalSettings('journal'),
    'journal: lifecycle': 'submit + poll + complete per iteration, each journaled as JobQueue does it (see src/journal/journal.ts for what commits when)',
    'journal: lifecycle, batched': `submitMany of ${BATCH} jobs, then ${BATCH} x (poll + complete) per iteration; jobs/s = ${BATCH} x iterations/s`,
    'journal: BullMQ': `${BULLMQ_VERSION} end to end, measured in this run before the leasehold cases, as the redis suite measures it: private redis-server, appendfsync ${BULLMQ_APPENDFSYNC}; ${LOAD.jobs} no-op jobs per run, Worker concurrency ${LOAD.concurrency}, addBulk of ${LOAD.batch}; median of the timed runs`,
  },
  async run() {
    const missing = redisMissing();
    const bullmq = missing === null ? await measureBullmqEndToEnd(BULLMQ_APPENDFSYNC) : undefined;
    const bullmqRate = bullmq === undefined ? undefined : median(bullmq.rates);
    const files = journalFiles('journal');
    try {
      const life = files.open('lifecycle');
      const batchedLife = files.open('lifecycle-batched');
      const jobs = Array.from({ length: BATCH }, () => ({ type: 'noop', payload: 'x' }));
      const counts = { life: 0, batchedLife: 0 };

      const bench = new Bench({ ...BENCH_TIME, throws: true });
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

      const [lifeOps, batchedLifeCalls] = bench.tasks.map(opsPerSecond) as [Rates, Rates];
      const batchedLifeOps: Rates = { mean: batchedLifeCalls.mean * BATCH, median: batchedLifeCalls.median * BATCH };

      const notes = [
        ...checkHolds('lifecycle', life, { succeeded: counts.life }),
        ...checkHolds('batched lifecycle', batchedLife, { succeeded: counts.batchedLife }),
        `jobs written: lifecycle ${counts.life.toLocaleString('en-US')}, batched lifecycle ${counts.batchedLife.toLocaleString('en-US')} (warmup included)`,
        bullmq === undefined
          ? `BullMQ was NOT measured in this run, so the lifecycles have nothing to be compared with: ${missing}`
          : `BullMQ end to end measured in this run: ${bullmq.rates.map(formatRate).join(', ')} jobs/s (median ${formatRate(bullmqRate!)}) under ${bullmq.settings}`,
        `not the same durability: the leasehold lifecycles run in one thread, one call at a time, on SQLite in WAL mode with synchronous NORMAL (a commit survives a crash of the process, not necessarily of the machine); BullMQ runs ${LOAD.concurrency} jobs at once on Redis with appendfsync ${BULLMQ_APPENDFSYNC} (fsynced once a second; a crash of Redis may lose the last second)`,
      ];

      const versus = bullmqRate === undefined ? 'vs BullMQ (not measured)' : `vs BullMQ ${formatRate(bullmqRate)}`;
      const vsBullmq = (rates: Rates) => (bullmqRate === undefined ? '-' : formatRatio(rates.mean / bullmqRate));
      const row = (name: string, rates: Rates): Row => ({
        case: name,
        'jobs/s': formatRate(rates.mean),
        'jobs/s at median': formatRate(rates.median),
        [versus]: vsBullmq(rates),
      });
      return {
        tables: [
          { title: 'tinybench (one row per iteration; batched: one iteration of 100 jobs)', rows: tinybenchRows(bench) },
          {
            title: `lifecycle vs BullMQ end to end (jobs/s; leasehold: 1 / mean latency; BullMQ: median of its timed runs, measured in this run${bullmq === undefined ? ' — NOT MEASURED: no redis-server' : ''})`,
            rows: [
              row(CASES.life, lifeOps),
              row(CASES.batchedLife, batchedLifeOps),
              bullmqRate === undefined
                ? { case: `${BULLMQ_CASE}: not measured, no redis-server`, 'jobs/s': '-', 'jobs/s at median': '-', [versus]: '-' }
                : { case: BULLMQ_CASE, 'jobs/s': formatRate(bullmqRate), 'jobs/s at median': '-', [versus]: formatRatio(1) },
            ],
          },
        ],
        unit: 'jobs/s (1 / mean latency; batched: 100 x iterations/s)',
        bars: [
          { label: 'leasehold submit → poll → complete', value: lifeOps.mean },
          { label: `leasehold lifecycle, batched ${BATCH}`, value: batchedLifeOps.mean },
          ...(bullmqRate === undefined ? [] : [{ label: 'BullMQ end to end (this run)', value: bullmqRate, baseline: true }]),
        ],
        ratios: bullmqRate === undefined ? {} : bullmqRatios(lifeOps, batchedLifeOps, bullmqRate),
        notes,
      };
    } finally {
      files.close();
    }
  },
};

function bullmqRatios(lifeOps: Rates, batchedLifeOps: Rates, bullmqRate: number): Record<string, number> {
  return {
    'lifecycle / BullMQ end to end (mean)': lifeOps.mean / bullmqRate,
    'lifecycle / BullMQ end to end (median)': lifeOps.median / bullmqRate,
    'batched lifecycle / BullMQ end to end (mean)': batchedLifeOps.mean / bullmqRate,
    'batched lifecycle / BullMQ end to end (median)': batchedLifeOps.median / bullmqRate,
  };
}
