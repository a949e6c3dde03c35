/**
 * Suite "redis": leasehold's RedisJobQueue beside BullMQ, on one private
 * redis-server that this suite starts (AOF on, `appendfsync always` for both:
 * every acknowledged call is on disk before its reply), at one concurrency.
 *
 * - drain: JOBS no-op jobs are queued first, untimed (BullMQ `addBulk`,
 *   leasehold `submitMany`, BATCH per call); then the clock runs from the
 *   start of the consumers to the last completion. BullMQ: a `Worker` with
 *   `concurrency` C. leasehold: C async claim loops in this thread, each
 *   completeAndPoll (complete and lease the next job, one script) until no
 *   job is left, on one client — what a WorkerPool thread does.
 * - end to end: the same, but the clock starts before the first add; one
 *   producer (a client of its own) adds the batches one after another while
 *   the consumers, started just before, process them.
 * - end to end, batched claims: leasehold's C jobs in flight are held by
 *   one claim loop (the target's row: C in flight on one client, as in
 *   BullMQ's one Worker), and beside it by two loops of C / 2 each; a loop
 *   completes its whole batch and leases the next in one script
 *   (completeManyAndPoll), as a WorkerPool thread with `concurrency` > 1
 *   could. BullMQ as in end to end. With `appendfsync always` a reply waits
 *   for an fsync, which Redis does once per event-loop pass for every write
 *   in it: two loops' scripts mostly arrive in passes of their own, so the
 *   split pays about twice the fsyncs per job.
 *
 * Every run uses a fresh queue on a server emptied before it (FLUSHALL, then
 * an AOF rewrite so that each run starts from a small AOF), and ends with the
 * counts checked: every job completed exactly once, at its first attempt.
 * Each case gets one warmup run per backend, then RUNS rounds, each running
 * BullMQ then leasehold, so that a noisy spell of the machine falls on both;
 * the table shows the median.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { RedisJobQueue, RetryPolicy, type Lease } from '../dist/index.js';
import { BULLMQ_VERSION, bullmqRun, type Load, type Stopwatch, type Timed } from './bullmq.js';
import { QUICK } from './conditions.js';
import { type Row, type Suite, atLeast, formatRate, formatRatio, median } from './report.js';
import { type AppendFsync, type RedisServer, redisMissing, redisVersion, startRedis } from './redis-server.js';

/** The load both backends get, in this suite and in the journal suite's BullMQ row. */
export const LOAD: Load = { jobs: QUICK ? 1_000 : 10_000, concurrency: 16, batch: 100, payload: 'x' };
/** Timed runs per case, after one warmup run. */
export const RUNS = 3;
/** The AOF fsync policy of the benchmark's redis-server, the same for both backends. */
export const APPENDFSYNC: AppendFsync = 'always';
const LEASE_MILLIS = 30_000;
/** How long an idle leasehold claim loop waits for new work before it polls again (end to end only). */
const WAIT_MILLIS = 20;

/** One timed run. */
export interface Sample {
  readonly millis: number;
  /** CPU time of this process (both clients and the benchmark) during the run. */
  readonly nodeCpuMillis: number;
  /** CPU time of redis-server during the run, if /proc tells it. */
  readonly redisCpuMillis: number | undefined;
  /** Script calls (EVAL, EVALSHA, FCALL) Redis served during the run. */
  readonly scripts: number;
  /** Microseconds Redis spent in those scripts, as its INFO commandstats counts them. */
  readonly scriptMicros: number;
  /** Other commands Redis served during the run: those the scripts ran (redis.call) and those clients sent outside scripts. */
  readonly commands: number;
}

/** A backend under test: runs `timed` once on a fresh queue, timed by the stopwatch. */
export interface Contender {
  readonly name: string;
  /** Which of a case's leasehold contenders it is, where the case has several (e.g. `2 batched claim loops`). */
  readonly variant?: string;
  readonly baseline: boolean;
  run(url: string, queueName: string, watch: Stopwatch): Promise<void>;
}

export function bullmqContender(timed: Timed, load: Load = LOAD): Contender {
  return {
    name: `BullMQ ${BULLMQ_VERSION}, Worker concurrency ${load.concurrency}`,
    baseline: true,
    run: (url, queueName, watch) => bullmqRun(url, queueName, timed, load, watch),
  };
}

/** What batched end to end must reach against BullMQ (issue #39), with one claim loop holding the C jobs in flight. */
const BATCHED_TARGET = 2.5;

/** What end to end with one job per claim loop (completeAndPoll) must reach against BullMQ (issue #39). */
const UNBATCHED_TARGET = 1.5;

export function leaseholdContender(timed: Timed, load: Load = LOAD): Contender {
  return {
    name: `leasehold RedisJobQueue, ${load.concurrency} claim loops`,
    baseline: false,
    run: (url, queueName, watch) => leaseholdRun(url, queueName, timed, load, watch, singleClaims(load.concurrency)),
  };
}

/** leasehold with the C jobs in flight shared by `loops` batched claim loops. */
export function leaseholdBatchedContender(loops: number): (timed: Timed, load?: Load) => Contender {
  return (timed, load = LOAD) => {
    const perLoop = Math.ceil(load.concurrency / loops);
    const variant = loops === 1 ? '1 batched claim loop' : `${loops} batched claim loops`;
    return {
      name: `leasehold RedisJobQueue, ${variant} of ${perLoop} jobs`,
      variant,
      baseline: false,
      run: (url, queueName, watch) => leaseholdRun(url, queueName, timed, load, watch, batchedClaims(loops, perLoop)),
    };
  };
}

/**
 * One warmup run per contender, then RUNS rounds of one run each, in the
 * given order, each on a freshly emptied server. Returns each contender's timed samples.
 */
export async function measure(server: RedisServer, contenders: readonly Contender[]): Promise<Map<Contender, Sample[]>> {
  const admin = new Redis(server.url, { lazyConnect: true });
  await admin.connect();
  const samples = new Map<Contender, Sample[]>(contenders.map((contender) => [contender, []]));
  let queues = 0;
  try {
    for (let round = 0; round <= RUNS; round++) {
      for (const contender of contenders) {
        await emptied(admin);
        const meter = new Meter(admin, server);
        await contender.run(server.url, `bench-${++queues}`, meter);
        if (round > 0) samples.get(contender)!.push(meter.sample());
      }
    }
  } finally {
    admin.disconnect();
  }
  return samples;
}

/** BullMQ's end-to-end rate on a redis-server of its own, fsyncing its AOF as `appendfsync` says: jobs/s of each timed run (see `measure`). */
export async function measureBullmqEndToEnd(appendfsync: AppendFsync): Promise<{ rates: number[]; settings: string }> {
  const server = await startRedis({ appendfsync });
  try {
    const bullmq = bullmqContender('end-to-end');
    const samples = (await measure(server, [bullmq])).get(bullmq)!;
    return { rates: samples.map((sample) => rate(sample)), settings: loadSettings(server) };
  } finally {
    await server.stop();
  }
}

/** What a BullMQ or leasehold figure of this suite was measured under, in one line. */
function loadSettings(server: RedisServer): string {
  return (
    `${LOAD.jobs.toLocaleString('en-US')} no-op jobs per run, concurrency ${LOAD.concurrency}, ${LOAD.batch} jobs per add, ` +
    `payload "${LOAD.payload}"; ${redisVersion().split(' sha=')[0]} on loopback, ${server.persistence}; 1 warmup + ${RUNS} timed runs, median`
  );
}

export function rate(sample: Sample): number {
  return (LOAD.jobs / sample.millis) * 1000;
}

/**
 * Each case: BullMQ, then leasehold's contenders, measured in the same rounds; the first leasehold one is the
 * case's headline, and carries the case's target (leasehold / BullMQ at least that), if it has one.
 */
const CASES: ReadonlyArray<{ timed: Timed; title: string; leasehold: ReadonlyArray<(timed: Timed) => Contender>; target?: number }> = [
  { timed: 'drain', title: 'claim + complete (jobs queued beforehand)', leasehold: [leaseholdContender] },
  { timed: 'end-to-end', title: 'end to end (adds timed too)', leasehold: [leaseholdContender], target: UNBATCHED_TARGET },
  { timed: 'end-to-end', title: 'end to end, batched claims (adds timed too)', leasehold: [leaseholdBatchedContender(1), leaseholdBatchedContender(2)], target: BATCHED_TARGET },
];

export const redis: Suite = {
  id: 'redis',
  title: `Redis backend vs BullMQ: ${LOAD.jobs.toLocaleString('en-US')} no-op jobs, concurrency ${LOAD.concurrency}`,
  config: {
    'redis: server': `a private redis-server started by the suite, loopback, appendonly yes, appendfsync ${APPENDFSYNC}, no RDB snapshots; FLUSHALL + AOF rewrite before every run`,
    'redis: jobs per run': LOAD.jobs,
    'redis: concurrency': `${LOAD.concurrency}: BullMQ Worker concurrency, leasehold async claim loops (completeAndPoll: complete + next lease in one script, as a WorkerPool thread) in the main thread; batched: 1 loop of ${LOAD.concurrency} jobs, and 2 loops of ${LOAD.concurrency / 2} (completeManyAndPoll)`,
    'redis: adds': `${LOAD.batch} jobs per BullMQ addBulk / leasehold submitMany call, one call at a time`,
    'redis: job': `name/type "noop", payload "${LOAD.payload}" (BullMQ stores it as JSON), the handler does nothing`,
    'redis: BullMQ': `${BULLMQ_VERSION}, defaults: completed jobs kept (removeOnComplete unset), 1 attempt`,
    'redis: leasehold': `RedisJobQueue, lease ${LEASE_MILLIS} ms, RetryPolicy(3, 100, 1000), capacity = jobs per run (finished jobs kept)`,
    'redis: runs': `1 warmup + ${RUNS} timed per case and backend, interleaved BullMQ / leasehold; median reported`,
  },
  async run() {
    const missing = redisMissing();
    if (missing !== null) {
      return { tables: [], bars: [], unit: 'jobs/s', ratios: {}, notes: [`SKIPPED: the Redis suite needs redis-server and did not run: ${missing}`] };
    }
    const server = await startRedis({ appendfsync: APPENDFSYNC });
    const results: Array<{ title: string; target?: number; bullmq: Sample[]; bullmqName: string; leasehold: Array<{ name: string; variant?: string; samples: Sample[] }> }> = [];
    let settings: string;
    try {
      settings = loadSettings(server);
      for (const { timed, title, leasehold: contender, target } of CASES) {
        const bullmq = bullmqContender(timed);
        const leaseholds = contender.map((make) => make(timed));
        const samples = await measure(server, [bullmq, ...leaseholds]);
        results.push({ title, target, bullmq: samples.get(bullmq)!, bullmqName: bullmq.name, leasehold: leaseholds.map((one) => ({ name: one.name, variant: one.variant, samples: samples.get(one)! })) });
      }
    } finally {
      await server.stop();
    }

    const medianRate = (samples: readonly Sample[]) => median(samples.map(rate));
    const rows: Row[] = [];
    const costRows: Row[] = [];
    const ratios: Record<string, number> = {};
    const bars: Array<{ label: string; value: number; baseline?: boolean }> = [];
    const targets = [];
    for (const { title, target, bullmq, bullmqName, leasehold } of results) {
      const base = medianRate(bullmq);
      const backends = [{ name: bullmqName, variant: undefined, samples: bullmq, baseline: true }, ...leasehold.map((one) => ({ ...one, baseline: false }))];
      for (const { name, variant, samples, baseline } of backends) {
        rows.push({
          case: title,
          backend: name,
          ...Object.fromEntries(samples.map((sample, i) => [`run ${i + 1} jobs/s`, formatRate(rate(sample))])),
          'jobs/s (median)': formatRate(medianRate(samples)),
          'vs BullMQ': formatRatio(medianRate(samples) / base),
        });
        const perJob = (pick: (sample: Sample) => number | undefined, scale: number) => {
          const values = samples.map(pick);
          return values.some((value) => value === undefined) ? '-' : (median(values as number[]) * scale / LOAD.jobs).toFixed(1);
        };
        costRows.push({
          case: title,
          backend: name,
          'wall µs/job': perJob((sample) => sample.millis, 1000),
          'redis-server CPU µs/job': perJob((sample) => sample.redisCpuMillis, 1000),
          'scripts/job': perJob((sample) => sample.scripts, 1),
          'µs in scripts/job': perJob((sample) => sample.scriptMicros, 1),
          'other commands/job': perJob((sample) => sample.commands, 1),
          'node CPU µs/job': perJob((sample) => sample.nodeCpuMillis, 1000),
        });
        const which = variant === undefined ? '' : `, ${variant}`;
        const short = title.split(' (')[0];
        bars.push({ label: `${baseline ? 'BullMQ' : 'leasehold'}, ${short}${which}`, value: medianRate(samples), baseline });
        if (baseline) continue;
        const ratio = medianRate(samples) / base;
        ratios[`leasehold / BullMQ, ${title}${which}`] = ratio;
        if (target !== undefined && samples === leasehold[0]!.samples) {
          targets.push(atLeast(`${short}${which} / BullMQ, concurrency ${LOAD.concurrency} (median)`, ratio, target));
        }
      }
    }
    return {
      tables: [
        { title: `jobs/s = ${LOAD.jobs.toLocaleString('en-US')} jobs / timed run; median of ${RUNS} runs`, rows },
        {
          title: 'where the time goes (medians per job; scripts: EVAL/EVALSHA/FCALL served by Redis, their time as INFO commandstats counts it; ' +
            'other commands: those the scripts ran plus those sent outside scripts)',
          rows: costRows,
        },
      ],
      unit: 'jobs/s',
      bars,
      ratios,
      targets,
      notes: [
        `measured under: ${settings}`,
        `both backends ran on the same redis-server, appendfsync ${APPENDFSYNC} for both: a write's reply waits for its fsync (Redis fsyncs once per event-loop pass, for all clients' writes in it)`,
        'counts checked after every run: BullMQ getJobCounts says completed = jobs and nothing else, each job id completed once; leasehold stats say succeeded = jobs, nothing pending, running or dead, every lease at attempt 1, no job leased twice',
      ],
    };
  },
};

/**
 * How a run's consumer claims: `count` loops, each running `loop` until no
 * job is left. A loop reports each lease to `claimed`, and calls `idle()`
 * after a poll that found nothing: true means stop (drain: the rest is
 * leased; end to end: the producer is done), false that it waited for work.
 */
interface ClaimLoops {
  readonly count: number;
  loop(consumer: RedisJobQueue, worker: string, claimed: (lease: Lease) => void, idle: () => Promise<boolean>): Promise<void>;
}

/** Each loop holds one job: complete it and lease the next in one script (completeAndPoll), as a WorkerPool thread does. */
function singleClaims(count: number): ClaimLoops {
  return {
    count,
    async loop(consumer, worker, claimed, idle) {
      for (let lease = await consumer.poll(worker, LEASE_MILLIS); ; ) {
        if (lease === undefined) {
          if (await idle()) return;
          lease = await consumer.poll(worker, LEASE_MILLIS);
          continue;
        }
        claimed(lease);
        lease = await consumer.completeAndPoll(lease.jobId, lease.token, worker, LEASE_MILLIS);
      }
    },
  };
}

/** Each loop holds up to `size` jobs: completes them all and leases the next ones in one script (completeManyAndPoll). */
function batchedClaims(count: number, size: number): ClaimLoops {
  return {
    count,
    async loop(consumer, worker, claimed, idle) {
      for (let leases = await consumer.pollMany(worker, LEASE_MILLIS, size); ; ) {
        if (leases.length === 0) {
          if (await idle()) return;
          leases = await consumer.pollMany(worker, LEASE_MILLIS, size);
          continue;
        }
        leases.forEach(claimed);
        const outcome = await consumer.completeManyAndPoll(leases.map(({ jobId, token }) => ({ jobId, token })), worker, LEASE_MILLIS, size);
        if (outcome.refused.length > 0) throw new Error(`leasehold refused ${outcome.refused.length} completes of live leases`);
        leases = outcome.leases;
      }
    },
  };
}

/**
 * One run of leasehold: a producer client, and a consumer client whose claim
 * loops process the jobs (see ClaimLoops). Drain: a loop stops at its first
 * empty poll (everything is queued, so the rest is leased). End to end: an
 * empty poll waits for new work while the producer is still adding.
 */
async function leaseholdRun(url: string, name: string, timed: Timed, load: Load, watch: Stopwatch, loops: ClaimLoops): Promise<void> {
  const connect = () => RedisJobQueue.connect({ redis: url, name, policy: new RetryPolicy(3, 100, 1_000), capacity: load.jobs });
  const producer = await connect();
  const consumer = await connect();
  try {
    let produced = false;
    const addAll = async () => {
      for (let added = 0; added < load.jobs; added += load.batch) {
        const count = Math.min(load.batch, load.jobs - added);
        await producer.submitMany(Array.from({ length: count }, () => ({ type: 'noop', payload: load.payload })));
      }
      produced = true;
    };
    const leased = new Set<string>();
    const claimed = (lease: Lease) => {
      if (leased.has(lease.jobId) || lease.attempt !== 1) throw new Error(`leasehold leased ${lease.jobId} again (attempt ${lease.attempt})`);
      leased.add(lease.jobId);
    };
    const idle = async () => {
      if (timed === 'drain' || produced) return true;
      await consumer.waitForWork(WAIT_MILLIS);
      return false;
    };
    if (timed === 'drain') await addAll();
    await watch.start();
    const running = Array.from({ length: loops.count }, (_, i) => loops.loop(consumer, `w${i}`, claimed, idle));
    await Promise.all([...running, ...(timed === 'end-to-end' ? [addAll()] : [])]);
    await watch.stop();
    const stats = await consumer.stats();
    if (leased.size !== load.jobs || stats.succeeded !== load.jobs || stats.pending !== 0 || stats.running !== 0 || stats.dead !== 0) {
      throw new Error(`leasehold after the run: ${leased.size} jobs leased, stats ${JSON.stringify(stats)}; expected ${load.jobs} succeeded and nothing else`);
    }
  } finally {
    await Promise.all([producer.close(), consumer.close()]);
  }
}

/** Empties the server and rewrites its AOF, so that every run starts alike. */
async function emptied(admin: Redis): Promise<void> {
  await admin.flushall();
  await admin.bgrewriteaof();
  for (;;) {
    const info = await admin.info('persistence');
    if (/aof_rewrite_in_progress:0/.test(info) && /aof_rewrite_scheduled:0/.test(info)) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU milliseconds of process `pid`, from /proc (Linux), or undefined. */
function processCpuMillis(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** What INFO commandstats names script calls, and the commands the meter itself sends (not counted). */
const SCRIPT_VERBS: ReadonlySet<string> = new Set(['eval', 'evalsha', 'fcall']);
const METER_VERBS: ReadonlySet<string> = new Set(['info', 'config|resetstat']);

/** A stopwatch that also reads both processes' CPU time and Redis's script statistics over the timed part. */
class Meter implements Stopwatch {
  readonly #admin: Redis;
  readonly #server: RedisServer;
  #start = { wall: 0, node: process.cpuUsage(), redis: undefined as number | undefined };
  #sample: Sample | undefined;

  constructor(admin: Redis, server: RedisServer) {
    this.#admin = admin;
    this.#server = server;
  }

  async start(): Promise<void> {
    await this.#admin.config('RESETSTAT');
    this.#start = { wall: performance.now(), node: process.cpuUsage(), redis: processCpuMillis(this.#server.pid) };
  }

  async stop(): Promise<void> {
    const millis = performance.now() - this.#start.wall;
    const node = process.cpuUsage(this.#start.node);
    const redisNow = processCpuMillis(this.#server.pid);
    const redisCpuMillis = redisNow === undefined || this.#start.redis === undefined ? undefined : redisNow - this.#start.redis;
    let scripts = 0;
    let scriptMicros = 0;
    let commands = 0;
    for (const [, name, calls, usec] of (await this.#admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      if (SCRIPT_VERBS.has(name!)) {
        scripts += Number(calls);
        scriptMicros += Number(usec);
      } else if (!METER_VERBS.has(name!)) {
        commands += Number(calls);
      }
    }
    this.#sample = { millis, nodeCpuMillis: (node.user + node.system) / 1000, redisCpuMillis, scripts, scriptMicros, commands };
  }

  sample(): Sample {
    if (this.#sample === undefined) throw new Error('the run never stopped its stopwatch');
    return this.#sample;
  }
}
