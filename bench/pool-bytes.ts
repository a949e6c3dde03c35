/**
 * Suite "pool-bytes": 1 MiB binary payloads through the pool, THREADS
 * threads, a WorkerPool on the in-memory JobQueue against piscina with a
 * `transferList` (the payload's ArrayBuffer moved to the thread, not
 * copied). Each job's payload is a fresh 1 MiB Uint8Array for both (made in
 * the timed run: a producer's new data); the handler (bench/bytes-task.mjs)
 * reads its span and returns a checksum. Two leasehold cases: `submit` of
 * the fresh array, which copies the bytes once into shared memory (one
 * native copy into a contiguous run), and the producer writing each payload
 * in place (`reserveBytes`, filled as the others fill theirs, then
 * submitted: no copy, the counterpart of the transferList). Either way the
 * handler gets a view of the bytes in shared memory, no copy out. The
 * issue's bound (at least piscina's rate) is the in-place row's; the copy
 * row's ratio is shown beside it. A run hands JOBS jobs to the pool at once (`submit`
 * and `finished` of each; piscina: `run` of each) and times until the last
 * is done. Cases alternate run by run; medians of RUNS runs.
 */
import { Piscina } from 'piscina';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../dist/index.js';
import { MiB, QUICK } from './conditions.js';
import { type Suite, atLeast, formatRate, formatRatio, median } from './report.js';
import { interleavedRuns } from './rounds.js';

const THREADS = 2;
const JOBS = QUICK ? 16 : 48;
const RUNS = QUICK ? 2 : 7;
const PAYLOAD_BYTES = MiB;
/** The bound: leasehold's rate at least piscina's. */
const TARGET = 1;
const TASK = new URL('./bytes-task.mjs', import.meta.url);

interface Peer {
  readonly name: string;
  readonly run: () => Promise<void>;
  readonly close: () => Promise<void>;
}

/**
 * A new payload, as a producer's fresh data: every byte written (a buffer
 * only allocated is untouched zero pages, which a transfer never faults in
 * and a copy would: that would time the allocator, not the transport).
 */
function payload(n: number): Uint8Array {
  return new Uint8Array(PAYLOAD_BYTES).fill(n & 0xff);
}

export const poolBytes: Suite = {
  id: 'pool-bytes',
  title: `binary payloads: ${JOBS} jobs of 1 MiB per run, ${THREADS} threads, WorkerPool vs piscina with a transferList`,
  config: {
    'pool-bytes: work': 'a fresh 1 MiB Uint8Array per job, every byte written by the producer; the handler sums one byte in 64 and returns the number',
    'pool-bytes: runs': `${RUNS} timed per case after one warmup, alternating; median jobs/s`,
    'pool-bytes: leasehold': 'WorkerPool on an in-memory JobQueue (default options: maxPayloadBytes 1 MiB, arena 64 MiB): submit() and finished() of each, all at once',
    'pool-bytes: leasehold, one copy': 'submit(type, bytes) of the fresh Uint8Array: its bytes copied once into shared memory',
    'pool-bytes: leasehold, in place': 'reserveBytes(1 MiB) filled by the producer (fill(), by words over shared memory: see SharedBytes), then submit() of it: no copy (the target row)',
    'pool-bytes: piscina': 'piscina.run(bytes, { transferList: [bytes.buffer] }) of each, all at once',
  },
  async run() {
    const peers: Peer[] = [];
    try {
      const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0));
      const pool = new WorkerPool(queue, { handlers: TASK, threads: THREADS });
      await pool.start();
      peers.push({
        name: 'leasehold WorkerPool, submit(bytes): one copy',
        run: async () => {
          // One submit per job, as a producer hands them over: the threads start on the first while the rest are made.
          await Promise.all(Array.from({ length: JOBS }, (_, n) => queue.finished(queue.submit('checksum', payload(n)))));
        },
        close: async () => undefined,
      });
      peers.push({
        name: 'leasehold WorkerPool, written in place (reserveBytes)',
        run: async () => {
          // The same bytes written by the producer, into the queue's memory: the submit adopts them.
          await Promise.all(Array.from({ length: JOBS }, (_, n) => queue.finished(queue.submit('checksum', queue.reserveBytes(PAYLOAD_BYTES).fill(n & 0xff)))));
        },
        close: () => pool.close(),
      });
      const piscina = new Piscina<Uint8Array, number>({ filename: TASK.href, minThreads: THREADS, maxThreads: THREADS, idleTimeout: Infinity });
      peers.push({
        name: 'piscina (transferList)',
        run: async () => {
          await Promise.all(Array.from({ length: JOBS }, (_, n) => {
            const bytes = payload(n);
            return piscina.run(bytes, { transferList: [bytes.buffer as ArrayBuffer] });
          }));
        },
        close: () => piscina.destroy(),
      });
      const times = await interleavedRuns(peers, RUNS, async (peer) => {
        const start = performance.now();
        await peer.run();
        return performance.now() - start;
      });
      const rates = peers.map((peer) => ({ name: peer.name, rate: (JOBS / median(times.get(peer)!)) * 1000 }));
      const [copied, inPlace, theirs] = rates as [typeof rates[0], typeof rates[0], typeof rates[0]];
      return {
        tables: [{ title: `1 MiB jobs/s (median of ${RUNS} runs)`, rows: rates.map((r) => ({ case: r.name, 'jobs/s (= MiB/s)': formatRate(r.rate) })) }],
        bars: rates.map((r) => ({ label: r.name, value: r.rate, baseline: r === theirs })),
        unit: 'jobs/s',
        ratios: { 'leasehold in place / piscina': inPlace.rate / theirs.rate, 'leasehold one copy / piscina': copied.rate / theirs.rate },
        notes: [
          `leasehold written in place (reserveBytes): ${formatRatio(inPlace.rate / theirs.rate)} of piscina's rate (the target)`,
          `leasehold submit(bytes), one copy into shared memory: ${formatRatio(copied.rate / theirs.rate)} of piscina's rate`,
        ],
        targets: [atLeast('1 MiB binary payload rate, written in place, vs piscina (transferList)', inPlace.rate / theirs.rate, TARGET)],
      };
    } finally {
      for (const peer of peers) await peer.close();
    }
  },
};
