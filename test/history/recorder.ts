/**
 * Records concurrent histories of the built queue (`dist/`, public API only):
 * a fixed set of worker threads (test/fixtures/history-thread.mjs), spawned
 * once and reused; for each history a fresh JobQueue on a fresh ManualClock,
 * a few submits made here first, then every thread's seeded random calls, all
 * stamped from one shared atomic counter. Each thread logs into its own block
 * of a preallocated SharedArrayBuffer and posts one message per history.
 */
import { Worker } from 'node:worker_threads';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { prng } from '../../dist/cli/random.js';
import type { Call, HistorySetup } from './history.js';
import { ROW, decode, record, type UnexpectedThrow } from './log.mjs';
import { submitArgs } from './plan.mjs';

export interface RecorderOptions {
  threads: number;
  /** Most calls one thread makes in a history. */
  maxCalls: number;
  /** Call the queue through test/fixtures/history-broken-queue.mjs instead of directly. */
  broken?: boolean;
}

export interface RecordedHistory {
  seed: number;
  setup: HistorySetup;
  calls: Call[];
  /** How often the broken wrapper (if any) handed out a second-best job. */
  misbehaved: number;
}

interface ThreadReport {
  count: number;
  unexpected: UnexpectedThrow[];
  misbehaved: number;
}

export const START = 1_000_000;
/** Submits the test makes before the threads start, so their first polls race for jobs. */
export const MAX_PREFILL = 4;

export class HistoryRecorder {
  readonly #options: RecorderOptions;
  readonly #workers: Worker[];
  readonly #logs: Float64Array[];
  readonly #stamps: Int32Array;
  /** This thread's own block, for the submits made before the threads start. */
  readonly #prefillLog = new Float64Array(MAX_PREFILL * ROW);

  private constructor(options: RecorderOptions) {
    this.#options = options;
    const stampBuffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    const lineBuffer = new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
    this.#stamps = new Int32Array(stampBuffer);
    this.#logs = [];
    this.#workers = [];
    for (let thread = 0; thread < options.threads; thread++) {
      const logBuffer = new SharedArrayBuffer(options.maxCalls * ROW * Float64Array.BYTES_PER_ELEMENT);
      this.#logs.push(new Float64Array(logBuffer));
      const workerData = { thread, parties: options.threads, logBuffer, stampBuffer, lineBuffer, broken: options.broken ?? false };
      this.#workers.push(new Worker(new URL('../fixtures/history-thread.mjs', import.meta.url), { workerData }));
    }
  }

  static start(options: RecorderOptions): HistoryRecorder {
    return new HistoryRecorder(options);
  }

  /** Records one history; everything about it (setup, calls per thread, arguments) follows from `seed`. */
  async record(seed: number): Promise<RecordedHistory> {
    const random = prng(seed);
    const setup = randomSetup(random);
    const clock = new ManualClock(setup.start);
    const queue = new JobQueue(clock, new RetryPolicy(setup.policy.maxAttempts, setup.policy.base, setup.policy.max), {
      capacity: setup.capacity,
      maxPayloadBytes: 64,
      arenaBytes: 1 << 16,
    });
    try {
      const prefill = Math.floor(random() * (MAX_PREFILL + 1));
      const unexpected: UnexpectedThrow[] = [];
      const mainThread = this.#options.threads;
      for (let row = 0; row < prefill; row++) {
        record(this.#prefillLog, row, this.#stamps, mainThread, queue, clock, 0, submitArgs(random, clock.now()), unexpected);
      }
      // Every thread makes as many calls, so that all of them reach every start line.
      const callsPerThread = Math.ceil(this.#options.maxCalls * (0.65 + 0.35 * random()));
      const syncEvery = 1 + Math.floor(random() * 4);
      const reports = await Promise.all(
        this.#workers.map((worker, thread) => {
          const threadSeed = (seed ^ Math.imul(thread + 1, 0x9e3779b1)) >>> 0;
          return this.#run(worker, { handle: queue.share(), clockBuffer: clock.buffer, seed: threadSeed, calls: callsPerThread, syncEvery });
        }),
      );
      const calls = decode(this.#prefillLog, prefill, unexpected);
      reports.forEach((report, thread) => calls.push(...decode(this.#logs[thread]!, report.count, report.unexpected)));
      return { seed, setup, calls, misbehaved: reports.reduce((sum, r) => sum + r.misbehaved, 0) };
    } finally {
      queue.close();
    }
  }

  #run(worker: Worker, message: unknown): Promise<ThreadReport> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => {
        worker.off('message', onMessage);
        reject(error);
      };
      const onMessage = (report: ThreadReport) => {
        worker.off('error', onError);
        resolve(report);
      };
      worker.once('message', onMessage);
      worker.once('error', onError);
      worker.postMessage(message);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }
}

/** A policy that retries at once or soon, a short or long capacity (small ones reach eviction and QueueFullError). */
export function randomSetup(random: () => number): HistorySetup {
  const base = random() < 0.5 ? 0 : Math.floor(random() * 10);
  return {
    start: START,
    policy: { maxAttempts: 1 + Math.floor(random() * 3), base, max: base * 3 },
    capacity: random() < 0.25 ? 4 + Math.floor(random() * 5) : 64,
  };
}
