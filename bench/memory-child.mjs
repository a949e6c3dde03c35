// Child process of the "memory" suite, run as `node --expose-gc memory-child.mjs JOBS PAYLOAD_BYTES`:
// reads its resident set size after a full GC, creates a queue of capacity JOBS,
// submits JOBS jobs (type "noop", an ASCII payload of PAYLOAD_BYTES each), reads it
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

/**
 * A payload of its own for every job, as a producer makes them (a flat string, as JSON.stringify
 * returns): an exclusive queue may keep a short one as the string itself (see Arena#kept), and one
 * string shared by every job would hide what that costs. Made in the submit loop, so that only what
 * the queue keeps stays resident.
 */
const template = Buffer.from('x'.repeat(payloadBytes), 'latin1');
function payloadOf(i) {
  template.write(i.toString(36).padStart(8, '0'), 0, 'latin1');
  return template.toString('latin1');
}
const beforeQueue = settled();
// Arena room to spare (the default is sized for smaller jobs): pages never touched are never resident, so only what the jobs use is counted.
const queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000), { capacity: jobs, arenaBytes: Math.min(2 ** 31 - 8, 512 * jobs) });
const emptyQueue = settled();
for (let i = 0; i < jobs; i++) queue.submit(TYPE, payloadOf(i));
const full = settled();
const pending = queue.queueDepth();
process.send({ beforeQueue, emptyQueue, full, pending, typeBytes: Buffer.byteLength(TYPE), payloadBytes }, () => {
  queue.close();
  process.disconnect();
});
