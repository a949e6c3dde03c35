/**
 * Suite "pool-wake": how soon an idle pool starts a newly submitted job —
 * the time from submit (or piscina's `run`) to the handler running, in the
 * handler's own clock (performance.timeOrigin + performance.now(), the same
 * in every thread). Sparse jobs: each sample waits GAP_MILLIS after the last
 * job ended, so that every thread is idle again, waiting for work. Peers in
 * the same process: a WorkerPool on the in-memory JobQueue (the issue's
 * bound), on a journaled JobQueue and on Redis (what they give), and piscina;
 * all with THREADS threads. Each sample is one tinybench iteration whose
 * duration is the measured latency (`overriddenDuration`). The cases take
 * turns in ROUNDS rounds (the order reversed every other round), so that a
 * shared machine's load, which shifts from second to second, weighs on each
 * alike; the table gives p50, p99 and the mean of all rounds' samples.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Piscina } from 'piscina';
import { Bench } from 'tinybench';
import { JobQueue, RedisJobQueue, RetryPolicy, WorkerPool, systemClock } from '../dist/index.js';
import { QUICK } from './conditions.js';
import { journalFiles } from './journal-files.js';
import { redisMissing, startRedis, type RedisServer } from './redis-server.js';
import { type Row, type Suite, atMost, formatRatio } from './report.js';

const THREADS = 2;
const SAMPLES = QUICK ? 100 : 500;
const ROUNDS = QUICK ? 4 : 10;
/**
 * Jobs each peer runs back to back before the first round, so that the rounds time a steady state: JavaScript
 * on both sides of the wake (submit and claim, run and the task's dispatch) runs in V8's optimizing tier only
 * after some thousand calls, and with the few hundred samples of the rounds alone their first rounds timed that
 * tiering up (leasehold's p50 fell from 3.3× piscina's in the first round to 1.9× in the tenth).
 */
const WARMUP_JOBS = QUICK ? 200 : 2000;
/** Long enough for a thread that finished a job to poll once more and fall asleep. */
const GAP_MILLIS = 3;
/** The bound: leasehold's p50 and p99 on the in-memory queue no worse than piscina's. */
const TARGET = 1;
const HANDLERS = new URL('./wake-handlers.mjs', import.meta.url);
const PISCINA = 'piscina';
const MEMORY = 'leasehold WorkerPool (memory)';
const JOURNAL = 'leasehold WorkerPool (journal)';
const REDIS = 'leasehold WorkerPool (Redis)';

function now(): number {
  return performance.timeOrigin + performance.now();
}

/** One peer: submits a job and resolves with when its handler began (see `now`); `close` ends it. */
interface Peer {
  readonly name: string;
  readonly start: () => Promise<number>;
  readonly close: () => Promise<void>;
}

async function poolPeer(name: string, queue: JobQueue | RedisJobQueue, close: () => Promise<void> | void): Promise<Peer> {
  const pool = new WorkerPool(queue, { handlers: HANDLERS, threads: THREADS });
  await pool.start();
  return {
    name,
    start: async () => (await queue.finished(await queue.submit('stamp', ''))) as number,
    close: async () => {
      await pool.close();
      await close();
    },
  };
}

export const poolWake: Suite = {
  id: 'pool-wake',
  title: `idle pool wake: submit → handler running, ${THREADS} threads, sparse jobs (${GAP_MILLIS} ms apart), vs piscina`,
  config: {
    'pool-wake: threads': THREADS,
    'pool-wake: samples per case': `${SAMPLES}, in ${ROUNDS} rounds of ${SAMPLES / ROUNDS}; the cases take turns, reversed every other round`,
    'pool-wake: gap between jobs': `${GAP_MILLIS} ms (threads idle)`,
    'pool-wake: warmup': `${WARMUP_JOBS} jobs per case back to back before the rounds (the JIT's optimizing tier reached)`,
    'pool-wake: queues': 'in-memory JobQueue (systemClock; the bound); journaled JobQueue (fresh file, WAL, synchronous NORMAL); RedisJobQueue (private redis-server, appendfsync everysec)',
  },
  async run() {
    const peers: Peer[] = [];
    const notes: string[] = [];
    const files = journalFiles('pool-wake');
    let server: RedisServer | undefined;
    try {
      peers.push(await poolPeer(MEMORY, new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { capacity: 4 * (SAMPLES + WARMUP_JOBS) }), () => undefined));
      peers.push(await poolPeer(JOURNAL, files.open('wake'), () => undefined));
      const missing = redisMissing();
      if (missing === null) {
        server = await startRedis({ appendfsync: 'everysec' });
        const redis = await RedisJobQueue.connect({ redis: server.url, name: 'pool-wake', policy: new RetryPolicy(1, 0, 0), capacity: 4 * (SAMPLES + WARMUP_JOBS) });
        peers.push(await poolPeer(REDIS, redis, () => redis.close()));
      } else {
        notes.push(`Redis case skipped: ${missing}`);
      }
      const piscina = new Piscina<null, number>({ filename: new URL('./wake-task.mjs', import.meta.url).href, minThreads: THREADS, maxThreads: THREADS, idleTimeout: Infinity });
      await Promise.all(Array.from({ length: THREADS }, () => piscina.run(null)));
      peers.push({ name: PISCINA, start: () => piscina.run(null), close: () => piscina.destroy() });

      for (const peer of peers) for (let i = 0; i < WARMUP_JOBS; i++) await peer.start();
      const samples = new Map<string, number[]>(peers.map((peer) => [peer.name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        const bench = new Bench({ iterations: SAMPLES / ROUNDS, time: 0, warmupIterations: round === 0 ? 20 : 5, warmupTime: 0, throws: true, retainSamples: true });
        for (const peer of round % 2 === 0 ? peers : [...peers].reverse()) {
          bench.add(peer.name, async () => {
            await sleep(GAP_MILLIS);
            const submitted = now();
            const started = await peer.start();
            return { overriddenDuration: started - submitted };
          });
        }
        await bench.run();
        for (const task of bench.tasks) {
          const result = task.result;
          if (result.state !== 'completed') throw new Error(`case "${task.name}" did not complete: ${result.state}`);
          samples.get(task.name)!.push(...result.latency.samples!);
        }
      }

      const stats = peers.map(({ name }) => {
        const sorted = samples.get(name)!.sort((a, b) => a - b);
        const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 1000;
        return { name, p50: at(0.5), p99: at(0.99), mean: (sorted.reduce((sum, value) => sum + value, 0) / sorted.length) * 1000, count: sorted.length };
      });
      const peer = stats.find((s) => s.name === PISCINA)!;
      const ours = stats.find((s) => s.name === MEMORY)!;
      const ratios: Record<string, number> = {};
      for (const s of stats) {
        if (s === peer) continue;
        const backend = s.name.slice(s.name.indexOf('(') + 1, -1);
        ratios[`p50 leasehold ${backend} / piscina`] = s.p50 / peer.p50;
        ratios[`p99 leasehold ${backend} / piscina`] = s.p99 / peer.p99;
        notes.push(`${backend}: p50 ${formatRatio(s.p50 / peer.p50)}, p99 ${formatRatio(s.p99 / peer.p99)} of piscina's`);
      }
      const rows: Row[] = stats.map((s) => ({ case: s.name, 'p50 µs': s.p50.toFixed(0), 'p99 µs': s.p99.toFixed(0), 'mean µs': s.mean.toFixed(0), samples: s.count }));
      return {
        tables: [{ title: `submit → handler running, µs (${SAMPLES} samples each)`, rows }],
        bars: stats.map((s) => ({ label: `${s.name} p50`, value: s.p50, baseline: s === peer })),
        unit: 'µs',
        lowerIsBetter: true,
        ratios,
        notes,
        targets: [atMost('p50 latency vs piscina (memory)', ours.p50 / peer.p50, TARGET), atMost('p99 latency vs piscina (memory)', ours.p99 / peer.p99, TARGET)],
      };
    } finally {
      for (const peer of peers) await peer.close();
      files.close();
      await server?.stop();
    }
  },
};
