// The loop that empties a queue in the "drain" and "work" suites, shared by the
// worker threads (drain-worker.mjs) and the main thread's own drain. Plain ESM
// on purpose: a worker thread runs it on the built code, with no TypeScript loader.

const LEASE_MILLIS = 60_000;
/** Empty polls in a row, with jobs still pending, after which the engine is taken to be stuck. */
const STUCK_AFTER = 1_000_000;

/**
 * Busy work of `iterations` steps of a xorshift generator, standing in for a
 * handler's CPU time. Returns the generator's state so the work cannot be
 * optimized away (callers fold it into a sink they report).
 */
export function spin(iterations) {
  let x = 0x9e3779b9;
  for (let i = 0; i < iterations; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
  }
  return x;
}

/**
 * Leases and completes jobs until nothing is pending; `spinIterations` of
 * busy work per job sit between a job's lease and its complete.
 * - 'plain': poll, then complete: two calls per job, as a user writes it.
 * - 'completeAndPoll': each complete also leases the next job in the same
 *   call, as a WorkerPool thread does.
 */
export function drainQueue(queue, workerId, loop, spinIterations) {
  let completed = 0;
  let emptyPolls = 0;
  let sink = 0;
  for (let emptyInARow = 0, lease = queue.poll(workerId, LEASE_MILLIS); ; ) {
    if (lease === undefined) {
      // Nothing ready. Done if nothing is pending either (another thread may
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
    if (spinIterations > 0) sink ^= spin(spinIterations);
    if (loop === 'completeAndPoll') {
      lease = queue.completeAndPoll(lease.jobId, lease.token, workerId, LEASE_MILLIS);
    } else {
      queue.complete(lease.jobId, lease.token);
      lease = queue.poll(workerId, LEASE_MILLIS);
    }
    completed++;
  }
  return { completed, emptyPolls, sink };
}
