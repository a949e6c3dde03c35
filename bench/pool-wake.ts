/**
 * Suite "pool-wake": how soon an idle pool starts a newly submitted job —
 * the time from submit (or piscina's `run`) to the handler running, in the
 * handler's own clock (performance.timeOrigin + performance.now(), the same
 * in every thread). Sparse jobs: each sample waits GAP_MILLIS after the last
 * job ended, so that every thread is asleep again, waiting for work. Peers in
 * the same process, one after the other: a WorkerPool on the
 * in-memory JobQueue, and piscina; both with THREADS threads. Each sample is
 * one tinybench iteration whose duration is the measured latency
 * (`overriddenDuration`); the table gives p50, p99 and the mean.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Piscina } from 'piscina';
import { Bench } from 'tinybench';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../dist/index.js';
import { QUICK } from './conditions.js';
import { type Row, type Suite, atMost, formatRatio } from './report.js';

const THREADS = 2;
const SAMPLES = QUICK ? 100 : 500;
/** Long enough for a thread that finished a job to poll once more and fall asleep. */
const GAP_MILLIS = 3;
/** The bound: leasehold's p50 and p99 no worse than piscina's. */
const TARGET = 1;

function now(): number {
  return performance.timeOrigin + performance.now();
}

export const poolWake: Suite = {
  id: 'pool-wake',
  title: `idle pool wake: submit → handler running, ${THREADS} threads, sparse jobs (${GAP_MILLIS} ms apart), vs piscina`,
  config: {
    'pool-wake: threads': THREADS,
    'pool-wake: samples per case': SAMPLES,
    'pool-wake: gap between jobs': `${GAP_MILLIS} ms (threads asleep)`,
    'pool-wake: queue': 'in-memory JobQueue (systemClock)',
  },
  async run() {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { capacity: 4 * SAMPLES });
    const pool = new WorkerPool(queue, { handlers: new URL('./wake-handlers.mjs', import.meta.url), threads: THREADS });
    await pool.start();
    const piscina = new Piscina<null, number>({ filename: new URL('./wake-task.mjs', import.meta.url).href, minThreads: THREADS, maxThreads: THREADS, idleTimeout: Infinity });
    await Promise.all(Array.from({ length: THREADS }, () => piscina.run(null)));
    const bench = new Bench({ iterations: SAMPLES, time: 0, warmupIterations: 20, warmupTime: 0, throws: true });
    bench.add('leasehold WorkerPool (memory)', async () => {
      await sleep(GAP_MILLIS);
      const submitted = now();
      const started = (await queue.finished(queue.submit('stamp', ''))) as number;
      return { overriddenDuration: started - submitted };
    });
    bench.add('piscina', async () => {
      await sleep(GAP_MILLIS);
      const submitted = now();
      const started = await piscina.run(null);
      return { overriddenDuration: started - submitted };
    });
    await bench.run();
    await pool.close();
    await piscina.destroy();
    const stats = bench.tasks.map((task) => {
      const result = task.result;
      if (result.state !== 'completed') throw new Error(`case "${task.name}" did not complete: ${result.state}`);
      return { name: task.name, p50: result.latency.p50 * 1000, p99: result.latency.p99 * 1000, mean: result.latency.mean * 1000 };
    });
    const [ours, peer] = stats as [typeof stats[0], typeof stats[0]];
    const rows: Row[] = stats.map((s) => ({ case: s.name, 'p50 µs': s.p50.toFixed(0), 'p99 µs': s.p99.toFixed(0), 'mean µs': s.mean.toFixed(0) }));
    return {
      tables: [{ title: `submit → handler running, µs (${SAMPLES} samples each)`, rows }],
      bars: stats.map((s) => ({ label: `${s.name} p50`, value: s.p50, baseline: s === peer })),
      unit: 'µs',
      lowerIsBetter: true,
      ratios: { 'p50 leasehold / piscina': ours.p50 / peer.p50, 'p99 leasehold / piscina': ours.p99 / peer.p99 },
      notes: [`p50 ${formatRatio(ours.p50 / peer.p50)}, p99 ${formatRatio(ours.p99 / peer.p99)} of piscina's`],
      targets: [atMost('p50 latency vs piscina', ours.p50 / peer.p50, TARGET), atMost('p99 latency vs piscina', ours.p99 / peer.p99, TARGET)],
    };
  },
};
