/**
 * Suite "features": what each job feature of issue #13 costs on the hot path.
 * Every case runs the same cycle on a queue of its own (submit one job, poll
 * it, complete it; the queue is full of finished jobs, so every submit evicts
 * the oldest, as in a queue that has run a while) and differs from the first
 * case, which uses no feature, in one thing only:
 *
 * - a result: the complete stores a small JSON result;
 * - an idempotent key: the submit carries a key of its own;
 * - throttle: the keyed submit carries throttleMillis (a key of its own);
 * - debounce: two debounced submits of one key (the second replaces the
 *   first's payload and pushes its runAt back) and a promote to make it ready;
 * - the edits of a PENDING job (changePriority, changeDelay, promote of a job
 *   submitted a minute out, updatePayload): one call between submit and poll;
 * - listing in use: `jobs()` was called once before the run, so the queue
 *   keeps its listing index up to date through every move;
 * - a rate limit on another type: every poll then takes the queue's lock;
 * - groups: each submit names one of two groups, no cap (fair turns: each ready job is filed
 *   in its ring keyed by its turn, and polls claim lock-free);
 * - a schedule defined (none due): nothing on the job path reads schedules;
 * - a retry policy of the job's own type: each submit reads it under the lock it holds anyway.
 * - DEAD limits set (`retain: { maxDead, maxDeadAgeMillis }`): every locked
 *   call sums the DEAD counts, and no DEAD job is there to evict;
 * - remove: each job removed once completed (one locked call more per cycle,
 *   and the submit then finds a free slot, with no eviction).
 * - flows in use: one flow submitted before the run waits (its child a day
 *   out), so every complete takes the queue's lock, where a child's success
 *   counts its parent down;
 * - a flow: each cycle submits a parent with one child (`submitFlow`), runs the
 *   child, then the parent, which reads `childResults`: two jobs per cycle;
 * - events: one `events()` subscription on this thread, so every complete
 *   publishes an entry to the queue's event ring (the reader runs between
 *   tinybench's tasks, and is told how many the ring lapped); every other case's
 *   queue has no subscriber, and each of its moves reads the subscriber count once.
 *
 * A last table times one `jobs()` page (100 SUCCEEDED jobs of 100k, and the
 * one DEAD job among them) on a queue that lists.
 */
import { Bench } from 'tinybench';
import { JobQueue, RetryPolicy, systemClock, type JobPage } from '../dist/index.js';
import { BENCH_TIME, MiB, QUICK } from './conditions.js';
import { type Row, type Suite, formatRate, formatRatio, tinybenchRows } from './report.js';
import { interleavedBenches, pooledRates } from './rounds.js';

const CAPACITY = QUICK ? 10_000 : 100_000;
const OPTIONS = { capacity: CAPACITY, arenaBytes: 64 * MiB } as const;
const LEASE_MILLIS = 30_000;
const RESULT = { ok: true, bytes: 48_213, key: 'thumbnails/2026/12/01/a.webp' } as const;
const PAGE = 100;
/** The flow of the "a flow" case: a parent and one child, both of type noop. */
const FLOW = { type: 'noop', payload: 'x', children: [{ type: 'noop', payload: 'x' }] } as const;
const WARMUP_CYCLES = QUICK ? 2_000 : 20_000;
/**
 * The cases take turns, each round a quarter of the budget: run once each, one after the other, the later
 * cases read faster than the first in one run and slower in another (every feature "faster" than none: 1.06×
 * to 1.37× on 2026-12-01, against 0.76× to 1.08× hours before), as the machine's speed drifted under them.
 */
const ROUNDS = QUICK ? 1 : 4;

interface FeatureCase {
  readonly name: string;
  readonly listed: boolean;
  /** The queue's `retain` option, if any. */
  readonly retain?: { maxDead?: number; maxDeadAgeMillis?: number };
  /** What the queue is given before the run, untimed. */
  prepare?(queue: JobQueue): void;
  cycle(queue: JobQueue, n: number): void;
}

const plainCycle = (queue: JobQueue): void => complete(queue, poll(queue, queue.submit('noop', 'x')));

const CASES: readonly FeatureCase[] = [
  { name: 'no feature: submit → poll → complete', listed: false, cycle: plainCycle },
  {
    name: 'a result: complete(jobId, token, result), a 70-byte JSON',
    listed: false,
    cycle: (queue) => {
      const lease = poll(queue, queue.submit('noop', 'x'));
      queue.complete(lease.jobId, lease.token, RESULT);
    },
  },
  {
    name: 'an idempotent key: submit(type, payload, { key })',
    listed: false,
    cycle: (queue, n) => complete(queue, poll(queue, queue.submit('noop', 'x', { key: `k${n}` }))),
  },
  {
    name: 'throttle: submit(type, payload, { key, throttleMillis })',
    listed: false,
    cycle: (queue, n) => complete(queue, poll(queue, queue.submit('noop', 'x', { key: `k${n}`, throttleMillis: 60_000 }))),
  },
  {
    name: 'debounce: two keyed submits (the second replaces), then promote',
    listed: false,
    cycle: (queue, n) => {
      const id = queue.submit('noop', 'x', { key: `k${n}`, debounceMillis: 60_000 });
      if (queue.submit('noop', 'y', { key: `k${n}`, debounceMillis: 60_000 }) !== id) throw new Error('the debounce made a second job');
      queue.promote(id);
      complete(queue, poll(queue, id));
    },
  },
  {
    name: 'changePriority: once between submit and poll',
    listed: false,
    cycle: (queue) => {
      const id = queue.submit('noop', 'x');
      queue.changePriority(id, 1);
      complete(queue, poll(queue, id));
    },
  },
  {
    name: 'changeDelay: changeDelay(id, 0) between submit and poll',
    listed: false,
    cycle: (queue) => {
      const id = queue.submit('noop', 'x');
      queue.changeDelay(id, 0);
      complete(queue, poll(queue, id));
    },
  },
  {
    name: 'promote: submitted a minute out, promoted, polled',
    listed: false,
    cycle: (queue) => {
      const id = queue.submit('noop', 'x', { delayMillis: 60_000 });
      queue.promote(id);
      complete(queue, poll(queue, id));
    },
  },
  {
    name: 'updatePayload: once between submit and poll',
    listed: false,
    cycle: (queue) => {
      const id = queue.submit('noop', 'x');
      queue.updatePayload(id, 'y');
      complete(queue, poll(queue, id));
    },
  },
  { name: 'listing in use: jobs() called once before the run', listed: true, cycle: plainCycle },
  {
    name: 'a rate limit: set on another type (polls take the lock)',
    listed: false,
    prepare: (queue) => queue.setRateLimit('email', { max: 100, windowMillis: 60_000 }),
    cycle: plainCycle,
  },
  {
    name: "a concurrency cap: 1,000 on the job's own type (polls take the lock)",
    listed: false,
    prepare: (queue) => queue.setConcurrency('noop', 1_000),
    cycle: plainCycle,
  },
  {
    name: 'a queue concurrency cap: 1,000 on the whole queue (polls take the lock)',
    listed: false,
    prepare: (queue) => queue.setConcurrency(1_000),
    cycle: plainCycle,
  },
  {
    // The label before ':' keys the saved bars and ratios (bench/results/features.json): keep it.
    name: 'groups: each submit names one of two groups, which take turns (polls lock-free, no cap)',
    listed: false,
    cycle: (queue, n) => complete(queue, poll(queue, queue.submit('noop', 'x', { group: n % 2 === 0 ? 'tenant-a' : 'tenant-b' }))),
  },
  {
    name: 'a schedule: one defined, none due',
    listed: false,
    prepare: (queue) => void queue.schedule('digest', { everyMillis: 3_600_000, type: 'email' }),
    cycle: plainCycle,
  },
  {
    name: "a retry policy: set on the job's own type",
    listed: false,
    prepare: (queue) => queue.setRetryPolicy('noop', new RetryPolicy(5, 100, 1_000)),
    cycle: plainCycle,
  },
  {
    name: 'DEAD limits: retain { maxDead: 1000, maxDeadAgeMillis: 1 day }',
    listed: false,
    retain: { maxDead: 1_000, maxDeadAgeMillis: 86_400_000 },
    cycle: plainCycle,
  },
  {
    name: 'remove: each job removed once completed (one call more)',
    listed: false,
    cycle: (queue) => {
      const lease = poll(queue, queue.submit('noop', 'x'));
      complete(queue, lease);
      queue.remove(lease.jobId);
    },
  },
  {
    name: 'flows in use: one flow waits (every complete takes the lock)',
    listed: false,
    prepare: (queue) => void queue.submitFlow({ type: 'report', children: [{ type: 'part', options: { delayMillis: 86_400_000 } }] }),
    cycle: plainCycle,
  },
  {
    name: 'a flow: submitFlow of a parent and a child, the child run, then the parent (two jobs)',
    listed: false,
    cycle: (queue) => {
      const [parent, child] = queue.submitFlow(FLOW);
      complete(queue, poll(queue, child!));
      const lease = poll(queue, parent!);
      if (Object.keys(queue.childResults(parent!)).length !== 1) throw new Error(`the parent ${parent} ran without its child's result`);
      complete(queue, lease);
    },
  },
  {
    name: 'events: one subscriber (each complete publishes to the ring)',
    listed: false,
    // A listener that does nothing: the case times the publish, and the reader's hand-off of each event it finds.
    prepare: (queue) => void queue.events().on('completed', () => undefined),
    cycle: plainCycle,
  },
];

export const features: Suite = {
  id: 'features',
  title: `job features: what a result, a key, throttle, debounce, the edits of a pending job, listing, a rate limit, a concurrency cap, groups, a schedule, a type's retry policy, DEAD limits, remove, flows and an events subscriber cost per submit → poll → complete`,
  config: {
    'features: queue': `capacity ${CAPACITY.toLocaleString('en-US')}, full of finished jobs (each submit evicts one), one queue per case`,
    'features: job': 'type "noop", payload "x", priority 0, runAt now',
    'features: page': `jobs({ status, limit: ${PAGE} }) among ${CAPACITY.toLocaleString('en-US')} SUCCEEDED jobs and one DEAD`,
    'features: rounds': `${ROUNDS} rounds, each running every case in turn for 1/${ROUNDS} of the tinybench budget; rates pool the rounds`,
  },
  async run() {
    const notes: string[] = [];
    const queues = CASES.map((c) => filled(c.listed, c.retain));
    CASES.forEach((c, i) => c.prepare?.(queues[i]!));
    // Every case's code warmed up before any is timed: tinybench times its tasks one after the other, and
    // the first would otherwise pay for the JIT the others reuse.
    const counters = CASES.map(() => 0);
    CASES.forEach((c, i) => {
      for (let k = 0; k < WARMUP_CYCLES; k++) c.cycle(queues[i]!, counters[i]!++);
    });
    const rounds = await interleavedBenches(ROUNDS, BENCH_TIME, (bench) => {
      CASES.forEach((c, i) => bench.add(c.name, () => c.cycle(queues[i]!, counters[i]!++)));
    });
    const pages = new Bench({ ...BENCH_TIME, throws: true });
    const lister = queues[CASES.findIndex((c) => c.listed)]!;
    addDeadJob(lister);
    pages.add(`jobs({ status: 'SUCCEEDED', limit: ${PAGE} })`, () => expectPage(lister.jobs({ status: 'SUCCEEDED', limit: PAGE }), PAGE));
    pages.add(`jobs({ status: 'DEAD', limit: ${PAGE} }): 1 of ${CAPACITY.toLocaleString('en-US')} jobs`, () =>
      expectPage(lister.jobs({ status: 'DEAD', limit: PAGE }), 1),
    );
    await pages.run();
    for (const queue of queues) await queue.close();

    const rates = rounds.cases.map(pooledRates);
    const plain = rates[0]!;
    const rows: Row[] = CASES.map((c, i) => ({
      case: c.name,
      'cycles/s': formatRate(rates[i]!.mean),
      'vs no feature': formatRatio(rates[i]!.mean / plain.mean),
      'cycles/s at median': formatRate(rates[i]!.median),
      'vs no feature at median': formatRatio(rates[i]!.median / plain.median),
    }));
    return {
      tables: [
        { title: `tinybench, ${ROUNDS} rounds`, rows: rounds.rows },
        { title: `each feature against none, ${ROUNDS} rounds pooled (cycles/s = 1 / mean latency; at median = 1 / median of the rounds' median latencies)`, rows },
        { title: 'one page of jobs()', rows: tinybenchRows(pages) },
      ],
      unit: 'submit → poll → complete cycles per second',
      bars: CASES.map((c, i) => ({ label: c.name.split(':')[0]!, value: rates[i]!.mean, baseline: i === 0 })),
      ratios: Object.fromEntries(CASES.slice(1).map((c, i) => [`${c.name.split(':')[0]} / no feature (median)`, rates[i + 1]!.median / plain.median])),
      targets: [],
      notes,
    };
  },
};

function poll(queue: JobQueue, jobId: string) {
  const lease = queue.poll('bench', LEASE_MILLIS);
  if (lease?.jobId !== jobId) throw new Error(`poll leased ${lease?.jobId ?? 'nothing'}, not the job just submitted (${jobId})`);
  return lease;
}

function complete(queue: JobQueue, lease: { jobId: string; token: number }): void {
  queue.complete(lease.jobId, lease.token);
}

function expectPage(page: JobPage, jobs: number): void {
  if (page.jobs.length !== jobs) throw new Error(`a page of ${page.jobs.length} jobs, expected ${jobs}`);
}

/** A queue full of finished jobs; listing in use if `listed`. */
function filled(listed: boolean, retain?: FeatureCase['retain']): JobQueue {
  const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), retain === undefined ? OPTIONS : { ...OPTIONS, retain });
  if (listed) queue.jobs({ limit: 1 });
  for (let i = 0; i < CAPACITY; i++) complete(queue, poll(queue, queue.submit('noop', 'x')));
  return queue;
}

/** One DEAD job (the policy gives one attempt), evicting the oldest finished one. */
function addDeadJob(queue: JobQueue): void {
  const lease = poll(queue, queue.submit('noop', 'x'));
  queue.fail(lease.jobId, lease.token, 'for the DEAD page');
}
