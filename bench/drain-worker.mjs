// Thread entry for the "drain" suite. For each run the main thread posts
// { handle, control, words }: attach to the shared queue, check in at the
// barrier, and once released complete + poll (one call) until no job is pending.
// Plain ESM on purpose: it runs the built code, with no TypeScript loader.
import { parentPort, threadId } from 'node:worker_threads';
import { JobQueue } from '../dist/index.js';

const LEASE_MILLIS = 60_000;
/** Empty polls in a row, with jobs still pending, after which the engine is taken to be stuck. */
const STUCK_AFTER = 1_000_000;

parentPort.on('message', ({ handle, control, words }) => {
  const flags = new Int32Array(control);
  let completed = 0;
  let emptyPolls = 0;
  let error = null;
  let checkedIn = false;
  try {
    const queue = JobQueue.attach(handle);
    const workerId = `drain-${threadId}`;
    Atomics.add(flags, words.ready, 1); // check in: attached, about to wait
    Atomics.notify(flags, words.ready);
    checkedIn = true;
    Atomics.wait(flags, words.go, 0); // the barrier: sleep until main stores go = 1
    // As a WorkerPool thread does: each complete also leases the next job, under the same lock.
    for (let emptyInARow = 0, lease = queue.poll(workerId, LEASE_MILLIS); ; ) {
      if (lease === undefined) {
        // Nothing ready. Done if nothing is pending either (the other thread may
        // still hold a lease, which is not pending); otherwise the empty poll was
        // spurious: count it and poll again.
        const pending = queue.queueDepth();
        if (pending === 0) break;
        emptyPolls++;
        if (++emptyInARow === STUCK_AFTER) throw new Error(`poll found nothing ${STUCK_AFTER} times in a row with ${pending} jobs pending`);
        lease = queue.poll(workerId, LEASE_MILLIS);
        continue;
      }
      emptyInARow = 0;
      lease = queue.completeAndPoll(lease.jobId, lease.token, workerId, LEASE_MILLIS);
      completed++;
    }
  } catch (cause) {
    error = cause instanceof Error ? (cause.stack ?? cause.message) : String(cause);
    if (!checkedIn) {
      Atomics.add(flags, words.ready, 1); // never leave main waiting at the barrier
      Atomics.notify(flags, words.ready);
    }
  }
  Atomics.add(flags, words.done, 1); // after the last complete; main stops its clock when all are done
  Atomics.notify(flags, words.done);
  parentPort.postMessage({ completed, emptyPolls, error });
});
