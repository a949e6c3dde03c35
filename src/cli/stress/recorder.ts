/**
 * Records stress histories: a fixed set of worker threads (./thread.ts),
 * spawned once and reused; for each history a fresh queue of the chosen
 * backend on a fresh ManualClock, a few submits made here first, then every
 * thread's seeded plan of calls, all recorded into one shared HistoryLog.
 * Everything a history's calls are chosen from follows from its seed; which
 * calls overlap is up to the machine.
 *
 * With `killEvery`, the main thread terminates a thread (chosen by the seed)
 * each time the threads have made that many more calls in all, as a crash
 * would: wherever it happens to be, often inside a queue call. The call it
 * was in is left pending in the log, and for the shared-memory queue its rows
 * are reclaimed (`threadExited`) as a WorkerPool does. Killed threads are
 * replaced before the next history. Kills go without the start line (a dead
 * thread never arrives).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ManualClock } from '../../clock.js';
import { RetryPolicy } from '../../policy.js';
import { JobQueue } from '../../queue.js';
import { RedisJobQueue } from '../../redis/queue.js';
import { PATIENCE } from '../../shm/memory/layout.js';
import type { Call, HistorySetup } from '../../testing/history.js';
import { HistoryLog } from '../../testing/log.js';
import { prng } from '../random.js';
import { capBeforePrefill, submit, submitArgs } from './plan.js';
import { START_LINE_WORDS } from './start-line.js';
import type { StressRound, StressThreadData, StressThreadReport } from './thread.js';

export type Backend = 'memory' | 'journal' | 'redis';

export interface StressRecorderOptions {
  threads: number;
  /** Most calls one thread makes in a history. */
  maxCalls: number;
  backend: Backend;
  /** The Redis server, for the redis backend. */
  redisUrl?: string;
  /** Kill a thread each time the threads have made this many more calls (0: never). */
  killEvery?: number;
  /** A module URL whose `wrapQueue` every thread calls the queue through (see ./thread.ts). */
  wrapper?: string;
  /** The plans also release, remove and edit (see the plan's `edits`). */
  edits?: boolean;
  /** The submits (the prefill's too) name groups, and caps are set on them (see the plan's `groups`). */
  groups?: boolean;
}

export interface RecordedHistory {
  seed: number;
  setup: HistorySetup;
  calls: Call[];
  /** How often the wrapper (if any) misbehaved. */
  misbehaved: number;
  /** Threads killed during the history. */
  killed: number;
  /**
   * Whether the queue took a live thread for dead during the history (its
   * patience grew: see src/shm/protocol/patience.ts). Then a submit may have
   * left a job number unused (docs/concurrency.md), in a call the queue does
   * not name: every submit is marked `presumedDead`, which lets the checker
   * skip an id for it.
   */
  tookLiveForDead: boolean;
  /** Ids of the jobs the history's submits returned, and how many submits never returned (killed inside). */
  submitted: string[];
  pendingSubmits: number;
  /** Every submitted job, once the history is over and the queue drained: accounted for, or what is wrong. */
  unaccounted: string[];
}

const START = 1_000_000;
/** Submits made here before the threads start, so that their first polls race for jobs. */
export const MAX_PREFILL = 4;
const THREAD_URL = new URL('./thread.js', import.meta.url);

export class StressRecorder {
  readonly #options: StressRecorderOptions;
  readonly #log: HistoryLog;
  readonly #lineBuffer = new SharedArrayBuffer(START_LINE_WORDS * Int32Array.BYTES_PER_ELEMENT);
  readonly #progress = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  readonly #workers: Worker[] = [];
  readonly #scratch: string | undefined;
  #histories = 0;

  constructor(options: StressRecorderOptions) {
    this.#options = options;
    // One block per thread, and the last for this thread's prefill.
    this.#log = HistoryLog.create({ blocks: options.threads + 1, bytesPerBlock: Math.max(64 * 1024, options.maxCalls * 1024) });
    this.#scratch = options.backend === 'journal' ? mkdtempSync(join(tmpdir(), 'leasehold-stress-')) : undefined;
    for (let thread = 0; thread < options.threads; thread++) this.#workers.push(this.#spawn(thread));
  }

  #spawn(thread: number): Worker {
    const workerData: StressThreadData = {
      thread,
      parties: this.#options.threads,
      log: this.#log.share(),
      lineBuffer: this.#lineBuffer,
      progressBuffer: this.#progress.buffer as SharedArrayBuffer,
      wrapper: this.#options.wrapper,
    };
    return new Worker(THREAD_URL, { workerData });
  }

  /** Records one history; its setup, prefill and every thread's plan follow from `seed`. */
  async record(seed: number): Promise<RecordedHistory> {
    const random = prng(seed);
    const setup = randomSetup(random);
    const clock = new ManualClock(setup.start);
    const queue = await this.#openQueue(setup, clock);
    this.#log.clear();
    Atomics.store(this.#progress, 0, 0);
    const main = this.#log.recorder(this.#options.threads);
    try {
      const recorded = main.wrap(queue as JobQueue);
      const prefill = Math.floor(random() * (MAX_PREFILL + 1));
      if (this.#options.groups === true) await capBeforePrefill(recorded, random);
      for (let i = 0; i < prefill; i++) {
        try {
          await submit(recorded, submitArgs(random, clock.now(), this.#options.groups === true));
        } catch {
          // Recorded: a full queue refuses, which is part of the history.
        }
      }
      // Every thread makes as many calls, so that all of them reach every start line.
      const calls = Math.ceil(this.#options.maxCalls * (0.65 + 0.35 * random()));
      const killEvery = this.#options.killEvery ?? 0;
      const syncEvery = killEvery > 0 ? 0 : 1 + Math.floor(random() * 4);
      const handle = queue.share();
      const rounds = this.#workers.map((worker, thread) => {
        const round: StressRound = { backend: this.#options.backend, handle, clockBuffer: clock.buffer, seed: (seed ^ Math.imul(thread + 1, 0x9e3779b1)) >>> 0, calls, syncEvery, edits: this.#options.edits === true, groups: this.#options.groups === true };
        return runRound(worker, round);
      });
      const killed = killEvery > 0 ? await this.#killWhileRunning(rounds, killEvery, random, queue) : 0;
      const reports = await Promise.all(rounds.map((r) => r.done));
      const history = this.#log.calls();
      const tookLiveForDead = 'buffers' in handle && Atomics.load(new Int32Array(handle.buffers.lockWords), PATIENCE) > 0;
      if (tookLiveForDead) for (const c of history) if (c.call.op === 'submit') c.presumedDead = true;
      const accounting = await account(queue, history, clock);
      return { seed, setup, calls: history, misbehaved: reports.reduce((sum, r) => sum + (r?.misbehaved ?? 0), 0), killed, tookLiveForDead, ...accounting };
    } finally {
      await queue.close();
      this.#histories++;
    }
  }

  async #openQueue(setup: HistorySetup, clock: ManualClock): Promise<JobQueue | RedisJobQueue> {
    const policy = new RetryPolicy(setup.policy.maxAttempts, setup.policy.base, setup.policy.max);
    const options = { capacity: setup.capacity, maxPayloadBytes: 64 };
    switch (this.#options.backend) {
      case 'memory':
        return new JobQueue(clock, policy, { ...options, arenaBytes: 1 << 16 });
      case 'journal':
        return JobQueue.open(join(this.#scratch!, `history-${this.#histories}.db`), clock, policy, { ...options, arenaBytes: 1 << 16 });
      case 'redis':
        return RedisJobQueue.connect({ ...options, redis: this.#options.redisUrl!, name: `leasehold-stress-${process.pid}-${Date.now()}-${this.#histories}`, policy, time: clock });
    }
  }

  /** Kills a running thread each time `every` more calls have been made, until every round is over; returns how many it killed. */
  async #killWhileRunning(rounds: Round[], every: number, random: () => number, queue: JobQueue | RedisJobQueue): Promise<number> {
    let killed = 0;
    let running = rounds.length;
    const allDone = Promise.all(rounds.map((r) => r.done)).then(() => 'done' as const);
    for (const r of rounds) void r.done.then(() => running--);
    let next = every;
    while (running > 0) {
      const made = Atomics.load(this.#progress, 0);
      if (made < next) {
        // Wakes at the next call any thread counts (thread.ts notifies), or when every round is over.
        const waited = Atomics.waitAsync(this.#progress, 0, made);
        if ((await Promise.race([waited.value, allDone])) === 'done') break;
        continue;
      }
      next += every;
      const alive = rounds.map((r, thread) => ({ r, thread })).filter(({ r }) => !r.over);
      if (alive.length === 0) break;
      const victim = alive[Math.floor(random() * alive.length)]!;
      const threadId = this.#workers[victim.thread]!.threadId;
      await this.#workers[victim.thread]!.terminate();
      killed++;
      // Rows of the dead thread, and any move it left half-done, are taken back as a WorkerPool would.
      if (queue instanceof JobQueue) queue.threadExited(threadId);
      this.#workers[victim.thread] = this.#spawn(victim.thread);
    }
    return killed;
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
    if (this.#scratch !== undefined) rmSync(this.#scratch, { recursive: true, force: true });
  }
}

interface Round {
  /** The thread's report, or undefined if it was killed. */
  done: Promise<StressThreadReport | undefined>;
  over: boolean;
}

function runRound(worker: Worker, round: StressRound): Round {
  const state: Round = { over: false, done: Promise.resolve(undefined) };
  state.done = new Promise<StressThreadReport | undefined>((resolve, reject) => {
    const finish = () => {
      state.over = true;
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const onMessage = (report: StressThreadReport) => {
      finish();
      resolve(report);
    };
    const onError = (error: Error) => {
      finish();
      reject(error);
    };
    const onExit = () => {
      finish();
      resolve(undefined);
    };
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
  });
  worker.postMessage(round);
  return state;
}


/**
 * After the history: the clock moved past every lease and backoff, and every
 * job still PENDING or RUNNING polled and completed here until none is
 * left; then every job a submit returned must be SUCCEEDED, DEAD or
 * CANCELLED — or evicted, if the history's capacity made room by evicting.
 */
export async function account(queue: JobQueue | RedisJobQueue, calls: readonly Call[], clock: ManualClock): Promise<Pick<RecordedHistory, 'submitted' | 'pendingSubmits' | 'unaccounted'>> {
  const submitted = calls.filter((c) => c.call.op === 'submit' && c.result.ok).map((c) => (c.result as { value: string }).value);
  const pendingSubmits = calls.filter((c) => c.call.op === 'submit' && c.pending === true).length;
  const unaccounted: string[] = [];
  for (let round = 0; round < 1_000; round++) {
    clock.advance(1_000_000);
    const lease = await queue.poll('stress-drain', 1_000_000);
    if (lease === undefined) break;
    await queue.complete(lease.jobId, lease.token);
  }
  for (const id of submitted) {
    try {
      const { status } = await queue.view(id);
      if (status !== 'SUCCEEDED' && status !== 'DEAD' && status !== 'CANCELLED') unaccounted.push(`${id} is ${status} after the drain`);
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_JOB_NOT_FOUND' || !/evicted/.test((error as Error).message)) {
        unaccounted.push(`${id}: ${(error as Error).message}`);
      }
    }
  }
  return { submitted, pendingSubmits, unaccounted };
}

/** A policy that retries at once or soon; a short or long capacity (short ones reach eviction and QueueFullError). */
export function randomSetup(random: () => number): HistorySetup {
  const base = random() < 0.5 ? 0 : Math.floor(random() * 10);
  return {
    start: START,
    policy: { maxAttempts: 1 + Math.floor(random() * 3), base, max: base * 3 },
    capacity: random() < 0.25 ? 4 + Math.floor(random() * 5) : 64,
  };
}
