/**
 * Suite "drain": how fast do worker threads empty a queue of no-op jobs?
 *
 * leasehold: JOBS jobs are submitted first (untimed); then 1, 2 or 4 worker
 * threads (drain-worker.mjs), already attached to the shared queue and parked
 * at a shared-memory barrier, are released at once and drain it. The clock
 * runs from the release to the last thread's check-out; the main thread
 * dispatches nothing. Two loops: the plain `poll` → `complete`, two calls per
 * job as a user writes it (the headline), and `completeAndPoll`, complete and
 * lease the next job in one call, as a WorkerPool thread does. Also the main
 * thread draining alone with the plain loop, no worker thread at all: the
 * same queue the threads drain, shared (the baseline of issue 9's target:
 * do two threads racing on one queue beat one?), and an exclusive queue,
 * never shared, which moves without the shared protocol (see Exclusive
 * queues in src/shm/memory/layout.ts); and 2 threads each draining a queue of its
 * own (half the jobs, no memory shared): the rate this machine gives two
 * threads making the same calls, the ceiling of the shared case.
 *
 * Peers: piscina and tinypool with as many threads, running a no-op task per
 * job, which the main thread hands out one by one (`pool.run`).
 *
 * One warmup round, then RUNS timed rounds (five: on a 2-vCPU VM one 2-thread
 * drain can take 1.7× another of the same build), each running every case once (a
 * noisy spell of the machine falls on all of them); the table shows the median.
 */
import { Worker } from 'node:worker_threads';
import type { DrainLoop } from './drain-loop.mjs';
import { QUICK } from './conditions.js';
import { type DrainSettings, type Sharing, drainOnMainThread, drainOptions, drainWithThreads, sharingLabel } from './leasehold-drain.js';
import { PEER_SETTINGS, type PeerPool, drainPeer, piscinaPool, tinypoolPool } from './peer-pools.js';
import { type Row, type Suite, atLeast, formatRate, formatRatio, median } from './report.js';
import { drainRate, interleavedRuns } from './rounds.js';

const JOBS = QUICK ? 20_000 : 200_000;
/** The peers' tasks per run: at their rate (tens of thousands a second here) JOBS would take seconds a run; a rate is what is compared. */
const PEER_TASKS = QUICK ? 5_000 : 50_000;
const THREAD_COUNTS = [1, 2, 4] as const;
const HEADLINE_THREADS = 2;
const RUNS = 5;

type Case =
  | { readonly kind: 'leasehold'; readonly threads: number; readonly loop: DrainLoop; readonly sharing: Sharing }
  | { readonly kind: 'main'; readonly threads: 0; readonly loop: 'plain'; readonly shared: boolean }
  | { readonly kind: 'peer'; readonly threads: number; readonly pool: PeerPool };

function caseName(c: Case): string {
  if (c.kind === 'main') return `leasehold, main thread alone, ${c.shared ? 'the queue shared' : 'an exclusive queue (never shared)'}, poll → complete`;
  if (c.kind === 'peer') return `${c.pool.name}, ${c.threads} thread${c.threads === 1 ? '' : 's'}, pool.run (peer)`;
  return `leasehold, ${c.threads} thread${c.threads === 1 ? '' : 's'}${sharingLabel(c.sharing)}, ${c.loop === 'plain' ? 'poll → complete' : 'completeAndPoll'}`;
}

const jobsOf = (c: Case) => (c.kind === 'peer' ? PEER_TASKS : JOBS);

export const drain: Suite = {
  id: 'drain',
  title: `drain: 1, 2 and 4 threads empty a queue of ${JOBS.toLocaleString('en-US')} no-op jobs`,
  config: {
    'drain: leasehold jobs per run': JOBS,
    'drain: peer tasks per run': PEER_TASKS,
    'drain: threads': `${THREAD_COUNTS.join(', ')} worker_threads for every contender, plus leasehold's main thread alone (on the queue shared, and on an exclusive one), and ${HEADLINE_THREADS} threads with a queue each (the ceiling)`,
    'drain: leasehold loops': 'poll → complete (headline); completeAndPoll',
    'drain: leasehold queue': `fresh per run, capacity ${drainOptions(JOBS).capacity}, arenaBytes ${drainOptions(JOBS).arenaBytes}, type "noop", payload ""`,
    'drain: peers': `piscina and tinypool, ${PEER_SETTINGS}`,
    'drain: runs': `1 warmup + ${RUNS} timed rounds, every case once per round, median reported`,
  },
  async run() {
    const notes: string[] = [];
    const workers = Array.from({ length: Math.max(...THREAD_COUNTS) }, () => new Worker(new URL('./drain-worker.mjs', import.meta.url)));
    const pools = THREAD_COUNTS.flatMap((threads) => [piscinaPool(threads), tinypoolPool(threads)]);
    const cases: Case[] = [
      ...(['plain', 'completeAndPoll'] as const).flatMap((loop) =>
        THREAD_COUNTS.map((threads): Case => ({ kind: 'leasehold', threads, loop, sharing: 'one queue' })),
      ),
      { kind: 'leasehold', threads: HEADLINE_THREADS, loop: 'plain', sharing: 'a queue each' },
      { kind: 'main', threads: 0, loop: 'plain', shared: true },
      { kind: 'main', threads: 0, loop: 'plain', shared: false },
      ...pools.map((pool): Case => ({ kind: 'peer', threads: pool.threads, pool })),
    ];
    let times: Map<Case, number[]>;
    try {
      times = await interleavedRuns(cases, RUNS, async (c) => {
        if (c.kind === 'peer') return drainPeer(c.pool, PEER_TASKS);
        const settings: DrainSettings = { jobs: JOBS, loop: c.loop, spinIterations: 0 };
        if (c.kind === 'main') return drainOnMainThread(settings, notes, c.shared);
        return drainWithThreads(workers.slice(0, c.threads), settings, notes, c.sharing);
      });
    } finally {
      await Promise.all([...workers.map((worker) => worker.terminate()), ...pools.map((pool) => pool.destroy())]);
    }

    const rate = (c: Case) => drainRate(jobsOf(c), times.get(c)!);
    const find = (match: (c: Case) => boolean) => cases.find(match)!;
    const plain = (threads: number, sharing: Sharing = 'one queue') =>
      find((c) => c.kind === 'leasehold' && c.loop === 'plain' && c.threads === threads && c.sharing === sharing);
    const piscina = (threads: number) => find((c) => c.kind === 'peer' && c.pool.name === 'piscina' && c.threads === threads);
    const tinypool = (threads: number) => find((c) => c.kind === 'peer' && c.pool.name === 'tinypool' && c.threads === threads);
    const mainAlone = find((c) => c.kind === 'main' && c.shared);
    const mainExclusive = find((c) => c.kind === 'main' && !c.shared);
    const headline = plain(HEADLINE_THREADS);

    const rows: Row[] = cases.map((c) => {
      const runs = times.get(c)!;
      const threads = c.kind === 'main' ? 1 : c.threads;
      return {
        case: caseName(c),
        'worker threads': c.threads,
        jobs: jobsOf(c),
        ...Object.fromEntries(runs.map((ms, i) => [`run ${i + 1} ms`, Math.round(ms)])),
        'median ms': Math.round(median(runs)),
        'jobs/s': formatRate(rate(c)),
        'vs piscina, same threads': formatRatio(rate(c) / rate(piscina(threads))),
        'vs tinypool, same threads': formatRatio(rate(c) / rate(tinypool(threads))),
        'vs main thread alone (queue shared)': formatRatio(rate(c) / rate(mainAlone)),
        'vs main thread alone (exclusive queue)': formatRatio(rate(c) / rate(mainExclusive)),
      };
    });
    const n = HEADLINE_THREADS;
    return {
      tables: [{ title: 'drain (jobs/s = jobs / median run time; "same threads": the peer with as many threads, 1 for the main thread)', rows }],
      unit: 'jobs/s',
      bars: cases.map((c) => ({ label: caseName(c).replace(/ \(peer\)$/, ''), value: rate(c), baseline: c.kind === 'peer' })),
      ratios: {
        [`leasehold ${n} threads completeAndPoll / piscina ${n} threads`]:
          rate(find((c) => c.kind === 'leasehold' && c.loop === 'completeAndPoll' && c.threads === n)) / rate(piscina(n)),
        [`leasehold ${n} threads poll → complete / tinypool ${n} threads`]: rate(headline) / rate(tinypool(n)),
        [`leasehold ${n} threads / 1 thread, poll → complete`]: rate(headline) / rate(plain(1)),
        [`leasehold ${n} threads, a queue each / main thread alone (the machine's ceiling)`]: rate(plain(n, 'a queue each')) / rate(mainAlone),
        [`leasehold ${n} threads poll → complete / main thread alone on an exclusive queue (never shared)`]: rate(headline) / rate(mainExclusive),
        [`leasehold main thread alone, exclusive queue / the queue shared`]: rate(mainExclusive) / rate(mainAlone),
      },
      targets: [
        atLeast(`${n}-thread drain, poll → complete / piscina ${n} threads`, rate(headline) / rate(piscina(n)), 20),
        atLeast(`${n}-thread drain, poll → complete / main thread draining the same queue alone`, rate(headline) / rate(mainAlone), 1.3),
      ],
      notes: [...new Set(notes)],
    };
  },
};
