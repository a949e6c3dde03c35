// Child process of the "memory" suite, run as `node --expose-gc memory-child.mjs JOBS PAYLOAD_BYTES`:
// reads its resident set size after a full GC, creates a queue of capacity JOBS,
// submits JOBS jobs (type "noop", an ASCII payload of PAYLOAD_BYTES), reads it
// again, and sends the readings to its parent. A process of its own so that no
// other suite's heap or pages are counted. Plain ESM: it runs the built code.
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';

const [jobs, payloadBytes] = process.argv.slice(2).map(Number);
const TYPE = 'noop';

/** Memory after full collections, so that only what is still held is counted. */
function settled() {
  for (let i = 0; i < 3; i++) globalThis.gc();
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

// One payload string for every job: the jobs' bytes live in the queue, not in this thread's heap.
const payload = 'x'.repeat(payloadBytes);
const beforeQueue = settled();
// Arena room to spare (the default is sized for smaller jobs): pages never touched are never resident, so only what the jobs use is counted.
const queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000), { capacity: jobs, arenaBytes: Math.min(2 ** 31 - 8, 512 * jobs) });
const emptyQueue = settled();
for (let i = 0; i < jobs; i++) queue.submit(TYPE, payload);
const full = settled();
const pending = queue.queueDepth();
process.send({ beforeQueue, emptyQueue, full, pending, typeBytes: Buffer.byteLength(TYPE), payloadBytes: Buffer.byteLength(payload) }, () => {
  queue.close();
  process.disconnect();
});
