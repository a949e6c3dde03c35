// Thread entry for the "group" suite. For each run the main thread posts
// { handle, mode, millis, control, words }: attach to the journaled queue,
// check in at the barrier, and once released repeat `mode` for `millis`:
//   'submit'  a durable submit, one job per call;
//   'life'    a job's whole life: submit, poll, complete.
// Replies { jobs, error }. Plain ESM on purpose: it runs the built code.
import { parentPort, threadId } from 'node:worker_threads';
import { JobQueue } from '../dist/index.js';

const LEASE_MILLIS = 60_000;

parentPort.on('message', ({ handle, mode, millis, control, words }) => {
  const flags = new Int32Array(control);
  let jobs = 0;
  let error = null;
  let queue;
  try {
    queue = JobQueue.attach(handle);
    const workerId = `group-${threadId}`;
    Atomics.add(flags, words.ready, 1);
    Atomics.notify(flags, words.ready);
    Atomics.wait(flags, words.go, 0);
    const end = performance.now() + millis;
    while (performance.now() < end) {
      queue.submit('noop', 'x');
      if (mode === 'life') {
        const lease = queue.poll(workerId, LEASE_MILLIS);
        if (lease === undefined) throw new Error('poll found nothing after a submit');
        queue.complete(lease.jobId, lease.token);
      }
      jobs++;
    }
  } catch (caught) {
    error = caught instanceof Error ? caught.stack ?? caught.message : String(caught);
  } finally {
    queue?.close();
    Atomics.add(flags, words.done, 1);
    Atomics.notify(flags, words.done);
    parentPort.postMessage({ jobs, error });
  }
});
