/**
 * Thread entry of `leasehold bench poll` (./command.ts): attaches to the
 * queue, says it is ready, waits at the shared start word, then takes jobs
 * until none is left, in the form it was given, and posts how many it completed.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { JobQueue, type SharedQueueHandle } from '../../queue.js';
import { RedisJobQueue, type RedisQueueHandle } from '../../redis/queue.js';
import type { Lease } from '../../types.js';

export type Form = 'poll-complete' | 'completeAndPoll' | 'batch';

export interface BenchThreadData {
  backend: 'memory' | 'redis';
  handle: SharedQueueHandle | RedisQueueHandle;
  form: Form;
  /** Leases per call of the batched Redis form. */
  batch: number;
  /** One int32: 0 until the main thread starts the clock. */
  start: SharedArrayBuffer;
}

const LEASE_MILLIS = 60_000;
const data = workerData as BenchThreadData;
const start = new Int32Array(data.start);
const id = `bench-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

if (data.backend === 'memory') {
  const queue = JobQueue.attach(data.handle as SharedQueueHandle);
  // Touches the queue once, so that the thread's first real call costs no setup inside the timing.
  queue.stats();
  parentPort!.postMessage('ready');
  // Waits for the start (pairs with the main thread's store and notify).
  Atomics.wait(start, 0, 0);
  let done = 0;
  if (data.form === 'completeAndPoll') {
    for (let lease = queue.poll(id, LEASE_MILLIS); lease !== undefined; done++) lease = queue.completeAndPoll(lease.jobId, lease.token, id, LEASE_MILLIS);
  } else {
    for (let lease = queue.poll(id, LEASE_MILLIS); lease !== undefined; lease = queue.poll(id, LEASE_MILLIS), done++) queue.complete(lease.jobId, lease.token);
  }
  queue.close();
  parentPort!.postMessage(done);
} else {
  const queue = await RedisJobQueue.attach(data.handle as RedisQueueHandle);
  await queue.stats();
  parentPort!.postMessage('ready');
  Atomics.wait(start, 0, 0);
  let done = 0;
  if (data.form === 'batch') {
    let leases: Lease[] = await queue.pollMany(id, LEASE_MILLIS, data.batch);
    while (leases.length > 0) {
      const outcome = await queue.completeManyAndPoll(leases.map((l) => ({ jobId: l.jobId, token: l.token })), id, LEASE_MILLIS, data.batch);
      done += leases.length - outcome.refused.length;
      leases = outcome.leases;
    }
  } else if (data.form === 'completeAndPoll') {
    for (let lease = await queue.poll(id, LEASE_MILLIS); lease !== undefined; done++) lease = await queue.completeAndPoll(lease.jobId, lease.token, id, LEASE_MILLIS);
  } else {
    for (let lease = await queue.poll(id, LEASE_MILLIS); lease !== undefined; lease = await queue.poll(id, LEASE_MILLIS), done++) await queue.complete(lease.jobId, lease.token);
  }
  await queue.close();
  parentPort!.postMessage(done);
}
