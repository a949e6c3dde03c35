/**
 * Thread entry of `leasehold stress` (./recorder.ts). Spawned once and reused:
 * for each history the main thread posts a fresh queue's handle; this thread
 * attaches, makes its seeded plan of calls (./plan.ts), each recorded into
 * its block of the shared history log, and posts one message when done.
 * Every `syncEvery` calls the threads meet at a start line (./start-line.ts),
 * so that their next calls really run at once. Each call made is counted in
 * the shared progress word, which the main thread watches to kill threads.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ManualClock } from '../../clock.js';
import { JobQueue, type SharedQueueHandle } from '../../queue.js';
import { RedisJobQueue, type RedisQueueHandle } from '../../redis/queue.js';
import { HistoryLog, type HistoryLogHandle } from '../../testing/log.js';
import { runPlan, type PlanQueue } from './plan.js';
import { StartLine } from './start-line.js';

export interface StressThreadData {
  thread: number;
  parties: number;
  log: HistoryLogHandle;
  lineBuffer: SharedArrayBuffer;
  progressBuffer: SharedArrayBuffer;
  /** A module whose `wrapQueue(queue, { seed, thread })` wraps the queue the plan calls (a test's deliberately broken queue). */
  wrapper: string | undefined;
}

export interface StressRound {
  backend: 'memory' | 'journal' | 'redis';
  handle: SharedQueueHandle | RedisQueueHandle;
  clockBuffer: SharedArrayBuffer;
  seed: number;
  calls: number;
  /** 0: no start line. */
  syncEvery: number;
  /** The plan also releases, removes and edits. */
  edits: boolean;
  /** The plan's submits name groups. */
  groups: boolean;
}

export interface StressThreadReport {
  /** How often the wrapper (if any) says it misbehaved. */
  misbehaved: number;
}

interface Wrapped {
  queue: PlanQueue;
  misbehaved?: () => number;
}

const data = workerData as StressThreadData;
const log = HistoryLog.attach(data.log);
const recorder = log.recorder(data.thread);
const line = new StartLine(data.lineBuffer, data.parties);
const progress = new Int32Array(data.progressBuffer);
const wrapQueue = data.wrapper === undefined
  ? undefined
  : ((await import(data.wrapper)) as { wrapQueue: (queue: PlanQueue, o: { seed: number; thread: number }) => Wrapped }).wrapQueue;

parentPort!.on('message', (round: StressRound) => {
  void run(round).then((report) => parentPort!.postMessage(report));
});

async function run({ backend, handle, clockBuffer, seed, calls, syncEvery, edits, groups }: StressRound): Promise<StressThreadReport> {
  // The main thread's ManualClock, seen from this thread: one time for every thread, and this thread moves it too.
  const clock = ManualClock.fromBuffer(clockBuffer);
  const real = backend === 'redis' ? await RedisJobQueue.attach(handle as RedisQueueHandle, clock) : JobQueue.attach(handle as SharedQueueHandle, clock);
  const wrapped: Wrapped = wrapQueue === undefined ? { queue: real } : wrapQueue(real, { seed, thread: data.thread });
  try {
    await runPlan({
      queue: recorder.wrap(wrapped.queue),
      recorder,
      clock,
      workerId: `w${data.thread}`,
      seed,
      calls,
      edits,
      groups,
      beforeCall: (i) => {
        if (syncEvery > 0 && i % syncEvery === 0) line.arrive();
        // Counts the call about to be made: the main thread kills by this count.
        Atomics.add(progress, 0, 1);
        Atomics.notify(progress, 0);
      },
    });
  } finally {
    await real.close();
  }
  return { misbehaved: wrapped.misbehaved?.() ?? 0 };
}
