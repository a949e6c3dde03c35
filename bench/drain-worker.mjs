// Thread entry for the "drain" and "work" suites. For each run the main thread
// posts { handle, loop, spinIterations, control, words }: attach to the shared
// queue, check in at the barrier, and once released drain it (drain-loop.mjs).
// Plain ESM on purpose: it runs the built code, with no TypeScript loader.
// workerData.library, when given, is the URL of another build's index.js (compare-builds.ts); else dist/.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { drainQueue } from './drain-loop.mjs';

const { JobQueue } = await import(workerData?.library ?? '../dist/index.js');

parentPort.on('message', ({ handle, loop, spinIterations, control, words }) => {
  const flags = new Int32Array(control);
  let counts = { completed: 0, emptyPolls: 0, sink: 0 };
  let error = null;
  let checkedIn = false;
  try {
    const queue = JobQueue.attach(handle);
    Atomics.add(flags, words.ready, 1); // check in: attached, about to wait
    Atomics.notify(flags, words.ready);
    checkedIn = true;
    Atomics.wait(flags, words.go, 0); // the barrier: sleep until main stores go = 1
    counts = drainQueue(queue, `drain-${threadId}`, loop, spinIterations);
  } catch (cause) {
    error = cause instanceof Error ? (cause.stack ?? cause.message) : String(cause);
    if (!checkedIn) {
      Atomics.add(flags, words.ready, 1); // never leave main waiting at the barrier
      Atomics.notify(flags, words.ready);
    }
  }
  Atomics.add(flags, words.done, 1); // after the last complete; main stops its clock when all are done
  Atomics.notify(flags, words.done);
  parentPort.postMessage({ ...counts, error });
});
