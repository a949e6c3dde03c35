/**
 * Suite "depth": does a poll get slower when the queue is deep? Each iteration
 * polls the best job, completes it and submits one more, so the number of
 * pending jobs stays where it started. Both queues have the same capacity and
 * arena, and both start full: the room the pending jobs leave is taken by
 * finished jobs, as in a queue that has been running a while, so every submit
 * evicts the oldest finished job in both cases. Only the depth differs.
 */
import { Bench } from 'tinybench';
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { BENCH_TIME, MiB, QUICK } from './conditions.js';
import { type Rates, type Suite, atLeast, formatRate, formatRatio, opsPerSecond, tinybenchRows } from './report.js';

const SHALLOW = 1_000;
const DEEP = QUICK ? 100_000 : 1_000_000;
const OPTIONS = { capacity: QUICK ? 110_000 : 1_100_000, arenaBytes: (QUICK ? 32 : 256) * MiB } as const;
const LEASE_MILLIS = 30_000;
const deepLabel = DEEP >= 1_000_000 ? `${DEEP / 1_000_000}M` : `${DEEP / 1_000}k`;

export const pollAtDepth: Suite = {
  id: 'depth',
  title: `poll at depth: poll + complete + submit, ${SHALLOW / 1_000}k vs ${deepLabel} pending`,
  config: {
    'depth: pending jobs': `${SHALLOW.toLocaleString('en-US')} vs ${DEEP.toLocaleString('en-US')}`,
    'depth: leasehold capacity': OPTIONS.capacity,
    'depth: leasehold arenaBytes': OPTIONS.arenaBytes,
    'depth: payload': '"x" (1 byte), type "noop", priority 0, runAt now',
    'depth: history': 'table starts full: capacity - depth finished jobs, so each submit evicts one',
  },
  async run() {
    const shallow = filled(SHALLOW);
    const deep = filled(DEEP);

    const bench = new Bench({ ...BENCH_TIME, throws: true });
    for (const { queue, depth } of [shallow, deep]) {
      bench.add(`poll + complete + submit, ${depth.toLocaleString('en-US')} pending`, () => {
        const lease = queue.poll('bench', LEASE_MILLIS);
        if (lease === undefined) throw new Error(`poll found nothing with ${depth} jobs pending`);
        queue.complete(lease.jobId, lease.token);
        queue.submit('noop', 'x');
      });
    }
    await bench.run();

    const [shallowOps, deepOps] = bench.tasks.map(opsPerSecond) as [Rates, Rates];
    const notes: string[] = [];
    for (const { queue, depth } of [shallow, deep]) {
      const pending = queue.queueDepth();
      if (pending !== depth) notes.push(`queue of depth ${depth} has ${pending} pending after the run`);
      await queue.close();
    }
    return {
      tables: [
        { title: 'tinybench', rows: tinybenchRows(bench) },
        {
          title: 'summary (ops/s = 1 / mean latency; at median = 1 / median latency)',
          rows: [shallow, deep].map(({ depth }, i) => {
            const rates = i === 0 ? shallowOps : deepOps;
            return {
              pending: depth.toLocaleString('en-US'),
              'ops/s': formatRate(rates.mean),
              'vs 1k': formatRatio(rates.mean / shallowOps.mean),
              'ops/s at median': formatRate(rates.median),
              'vs 1k at median': formatRatio(rates.median / shallowOps.median),
            };
          }),
        },
      ],
      unit: 'poll+complete+submit per second (1 / mean latency)',
      bars: [
        { label: `${SHALLOW.toLocaleString('en-US')} pending`, value: shallowOps.mean, baseline: true },
        { label: `${DEEP.toLocaleString('en-US')} pending`, value: deepOps.mean },
      ],
      ratios: { [`${deepLabel} / 1k speed (median)`]: deepOps.median / shallowOps.median },
      targets: [atLeast(`poll + complete + submit at ${deepLabel} / at 1k pending (mean; 1.00x = no slowdown)`, deepOps.mean / shallowOps.mean, 0.5)],
      notes,
    };
  },
};

/** A queue holding `depth` pending jobs, its other slots taken by finished ones. */
function filled(depth: number): { queue: JobQueue; depth: number } {
  const queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000), OPTIONS);
  for (let i = depth; i < OPTIONS.capacity; i++) {
    queue.submit('noop', 'x');
    const lease = queue.poll('history', LEASE_MILLIS);
    if (lease === undefined) throw new Error('poll found nothing right after a submit');
    queue.complete(lease.jobId, lease.token);
  }
  for (let i = 0; i < depth; i++) queue.submit('noop', 'x');
  return { queue, depth };
}
