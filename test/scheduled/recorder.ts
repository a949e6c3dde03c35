/**
 * Records histories of the built queue (`dist/`) under the deterministic
 * scheduler (dist/scheduling/): the seeded calls of `leasehold stress`
 * (src/cli/stress/plan.ts), recorded by the public testing kit's history
 * log (src/testing/log.ts), made by real worker threads
 * (../fixtures/scheduled-thread.mjs), but one step of the core at a time in
 * the order the scheduler picks. Everything — the queue's setup, each
 * thread's calls, the interleaving, a kill or a stall — follows from the
 * seed and the options, so a failing history replays exactly.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { prng } from '../../dist/cli/random.js';
import { capBeforePrefill, submit, submitArgs } from '../../dist/cli/stress/plan.js';
import { MAX_PREFILL, randomSetup } from '../../dist/cli/stress/recorder.js';
import { Scheduler, type HistoryPlan, type PlannedHold, type PlannedStall, type ScheduledRun } from '../../dist/scheduling/scheduler.js';
import { pct, randomWalk } from '../../dist/scheduling/strategies.js';
import { HistoryLog, type Call, type HistorySetup } from '../../dist/testing/index.js';

export type StrategyName = 'pct' | 'random';
/** The backends that run in one process: shared memory, and shared memory with its SQLite journal. */
export type ScheduledBackend = 'memory' | 'journal';

export interface ScheduledHistoryOptions {
  seed: number;
  backend: ScheduledBackend;
  threads: number;
  /** Calls each thread makes. */
  calls: number;
  strategy: StrategyName;
  /** PCT's depth d (d−1 priority change points). */
  depth?: number;
  /** End thread `thread` at its `step`-th step. */
  kill?: { thread: number; step: number };
  /** Stall thread `thread` at its `step`-th step for `millis` of virtual time (one stall, or several). */
  stall?: PlannedStall | PlannedStall[];
  /** Hold thread `thread` at its `step`-th step until thread `until.thread` has taken `until.step` steps. */
  hold?: PlannedHold;
  /** The threads also release leases, remove jobs and edit pending ones (see the plan's `edits`). */
  edits?: boolean;
  /** Submits name groups (the plan's `groups`), the prefill's too, and the groups are capped and uncapped: checked in `relaxed-order` (see ./groups.test.ts). */
  groups?: boolean;
  /** The threads also reserve payloads to write in place, and submit (mostly) or release them later (see ./reservations.test.ts). */
  reservations?: boolean;
}

export interface ScheduledHistory {
  options: ScheduledHistoryOptions;
  setup: HistorySetup;
  /** Every call, in invocation order; a killed thread's call in flight is pending. */
  calls: Call[];
  /** The call the killed thread was in when it was ended (its op), if the kill landed inside a call. */
  killedIn: string | undefined;
  /** What the scheduler did: steps, trace, kills. */
  run: ScheduledRun;
  /** The queue after the history, for the checks a test makes of it (closed by the next history). */
  queue: JobQueue;
  clock: ManualClock;
  /** For each thread, its step count as each of its calls began (2i) and ended (2i + 1): which call a step belongs to. */
  callSteps: Int32Array[];
  /** The threadId of each thread killed (what `queue.threadExited` is told), by its index in the history. */
  killedThreadIds: Map<number, number>;
}

/** The patience of the scheduled queues: short, so that a stall of a few times it is a handful of naps. */
export const LOCK_TIMEOUT_MILLIS = 20;
/** PCT's change points are drawn among this many steps per call of a thread (about a call's steps). */
const STEPS_PER_CALL = 40;

/** A thread's reply to a message (see ../fixtures/scheduled-thread.mjs). */
interface ThreadReply {
  phase: string;
}

export class ScheduledRecorder {
  readonly #scheduler = new Scheduler();
  readonly #maxThreads: number;
  readonly #maxCalls: number;
  readonly #workers: (Worker | undefined)[] = [];
  readonly #exits: Promise<unknown>[] = [];
  /** Each worker's threadId, read while it runs (an exited Worker's is -1). */
  readonly #threadIds = new WeakMap<Worker, number>();
  /** A thread started ahead for the index a planned kill ends, so that the next history need not wait for one to start. */
  #spare: { thread: number; worker: Worker; exit: Promise<unknown> } | undefined;
  readonly #log: HistoryLog;
  readonly #stepBuffers: SharedArrayBuffer[] = [];
  /** Where the journaled histories keep their journals. */
  readonly #directory = mkdtempSync(join(tmpdir(), 'leasehold-scheduled-'));
  #journals = 0;
  #queue: JobQueue | undefined;

  constructor(maxThreads: number, maxCalls: number) {
    this.#maxThreads = maxThreads;
    this.#maxCalls = maxCalls;
    // A block per thread, and the last for this thread's prefill.
    this.#log = HistoryLog.create({ blocks: maxThreads + 1, bytesPerBlock: 64 * 1024 });
    for (let thread = 0; thread < maxThreads; thread++) {
      this.#stepBuffers.push(new SharedArrayBuffer(2 * maxCalls * Int32Array.BYTES_PER_ELEMENT));
      this.#workers.push(undefined);
      this.#exits.push(Promise.resolve());
    }
  }

  /** Records one history; the same options record the same history. */
  async record(options: ScheduledHistoryOptions): Promise<ScheduledHistory> {
    const { seed, threads, calls } = options;
    if (threads > this.#maxThreads || calls > this.#maxCalls) throw new RangeError(`At most ${this.#maxThreads} threads of ${this.#maxCalls} calls`);
    await this.#queue?.close();
    const random = prng(seed);
    const setup = randomSetup(random);
    const clock = new ManualClock(setup.start);
    const policy = new RetryPolicy(setup.policy.maxAttempts, setup.policy.base, setup.policy.max);
    // Payloads written in place are thousands of bytes (a run of the arena is 4033 on): room for several per thread.
    const room = options.reservations === true ? { maxPayloadBytes: 8192, arenaBytes: 1 << 18 } : { maxPayloadBytes: 64, arenaBytes: 1 << 16 };
    const queueOptions = { capacity: setup.capacity, ...room, lockTimeoutMillis: LOCK_TIMEOUT_MILLIS };
    const queue =
      options.backend === 'journal'
        ? JobQueue.open(join(this.#directory, `${++this.#journals}.db`), clock, policy, queueOptions)
        : new JobQueue(clock, policy, queueOptions);
    this.#queue = queue;
    this.#log.clear();
    const prefill = Math.floor(random() * (MAX_PREFILL + 1));
    const recorded = this.#log.recorder(this.#maxThreads).wrap(queue);
    if (options.groups === true) await capBeforePrefill(recorded, random);
    for (let i = 0; i < prefill; i++) {
      try {
        submit(recorded, submitArgs(random, clock.now(), options.groups === true));
      } catch {
        // Recorded: a full queue refuses, which is part of the history.
      }
    }
    if (options.kill !== undefined && this.#spare?.thread !== options.kill.thread) {
      await this.#spare?.worker.terminate();
      this.#spare = this.#spawn(options.kill.thread);
    }
    const handle = queue.share();
    // One at a time, in order: which row each thread gets is the same in every replay.
    for (let thread = 0; thread < threads; thread++) await this.#ask(this.#worker(thread), { phase: 'attach', handle, clockBuffer: clock.buffer });
    const reports: Promise<ThreadReply | undefined>[] = [];
    for (let thread = 0; thread < threads; thread++) {
      const worker = this.#worker(thread);
      const threadSeed = (seed ^ Math.imul(thread + 1, 0x9e3779b1)) >>> 0;
      reports.push(this.#ask(worker, { phase: 'run', scheduleSeed: seed, seed: threadSeed, calls, edits: options.edits === true, groups: options.groups === true, reservations: options.reservations === true }));
    }
    const plan: HistoryPlan = { strategy: strategyOf(options) };
    if (options.kill !== undefined) plan.kill = options.kill;
    if (options.stall !== undefined) plan.stall = options.stall;
    if (options.hold !== undefined) plan.hold = options.hold;
    // Blocks this thread until the history is over: the threads run one step at a time meanwhile.
    let run: ScheduledRun;
    try {
      run = this.#scheduler.run(threads, plan, (thread) => void this.#workers[thread]!.terminate());
    } catch (error) {
      // The threads are mid-history: they cannot be reused.
      await this.close();
      throw new Error(`${(error as Error).message}\nreplay: ${replayCommand(options)}`, { cause: error });
    }
    const killedThreadIds = new Map(run.killed.map((thread) => [thread, this.#threadIds.get(this.#workers[thread]!)!]));
    for (const thread of run.killed) {
      // Its index is free for a new thread only once it has exited: until then it waits on the same control words.
      await this.#exits[thread];
      this.#scheduler.forget(thread);
      const spare = this.#spare?.thread === thread ? this.#spare : this.#spawn(thread);
      this.#spare = undefined;
      this.#workers[thread] = spare.worker;
      this.#exits[thread] = spare.exit;
    }
    const done = await Promise.all(reports);
    for (let thread = 0; thread < threads; thread++) if (done[thread] !== undefined) await this.#ask(this.#workers[thread]!, { phase: 'close' });
    const callsMade = this.#log.calls();
    const killedIn = callsMade.find((c) => c.pending === true)?.call.op;
    const callSteps = this.#stepBuffers.slice(0, threads).map((buffer) => Int32Array.from(new Int32Array(buffer)));
    for (const stall of [options.stall ?? []].flat()) markPresumedDead(callsMade, callSteps, stall);
    return { options, setup, calls: callsMade, killedIn, run, queue, clock, callSteps, killedThreadIds };
  }

  async close(): Promise<void> {
    await this.#queue?.close();
    await Promise.all([...this.#workers, this.#spare?.worker].map((worker) => worker?.terminate()));
    this.#spare = undefined;
    this.#workers.fill(undefined);
    rmSync(this.#directory, { recursive: true, force: true });
  }

  #worker(thread: number): Worker {
    const existing = this.#workers[thread];
    if (existing !== undefined) return existing;
    const { worker, exit } = this.#spawn(thread);
    this.#workers[thread] = worker;
    this.#exits[thread] = exit;
    return worker;
  }

  #spawn(thread: number): { thread: number; worker: Worker; exit: Promise<unknown> } {
    const workerData = { thread, controlBuffer: this.#scheduler.buffer, log: this.#log.share(), stepBuffer: this.#stepBuffers[thread] };
    // Its steps can be scheduled only so (see src/shm/memory/steps.ts); elsewhere a step is Atomics' own function.
    const worker = new Worker(new URL('../fixtures/scheduled-thread.mjs', import.meta.url), { workerData, env: { ...process.env, LEASEHOLD_SCHEDULED: '1' } });
    this.#threadIds.set(worker, worker.threadId);
    return { thread, worker, exit: once(worker, 'exit') };
  }

  /** Posts `message` to `worker`; its reply, or undefined if it was killed. */
  #ask(worker: Worker, message: unknown): Promise<ThreadReply | undefined> {
    return new Promise((resolve, reject) => {
      const onMessage = (reply: ThreadReply) => settle(() => resolve(reply));
      const onExit = () => settle(() => resolve(undefined));
      const onError = (error: Error) => settle(() => reject(error));
      const settle = (then: () => void) => {
        worker.off('message', onMessage).off('exit', onExit).off('error', onError);
        then();
      };
      worker.once('message', onMessage).once('exit', onExit).once('error', onError);
      worker.postMessage(message);
    });
  }
}

function strategyOf(options: ScheduledHistoryOptions): HistoryPlan['strategy'] {
  const seed = (options.seed * 0x85ebca6b) >>> 0;
  if (options.strategy === 'random') return randomWalk(seed);
  return pct(seed, { depth: options.depth ?? 2, steps: options.threads * options.calls * STEPS_PER_CALL });
}

/** The command that replays a history: printed with every failure. */
export function replayCommand(options: ScheduledHistoryOptions): string {
  // A kill, a stall or a hold replays where recovery is checked as well.
  // A history with edits (groups, reservations) replays in the suite of edits (of groups, reservations), where each kind has its own test.
  const suite = options.reservations === true ? 'reservations' : options.groups === true ? 'groups' : options.edits === true ? 'edits' : options.kill === undefined && options.stall === undefined && options.hold === undefined ? 'histories' : 'stalls';
  return `LEASEHOLD_SCHEDULE='${JSON.stringify(options)}' npx vitest run test/scheduled/${suite}.test.ts`;
}

/** Marks the call the stalled thread was in at its stalled step (if it reached it): it was taken for dead there. */
function markPresumedDead(calls: Call[], callSteps: Int32Array[], stall: { thread: number; step: number }): void {
  const steps = callSteps[stall.thread]!;
  const own = calls.filter((c) => c.thread === stall.thread).sort((a, b) => a.inv - b.inv);
  own.forEach((call, i) => {
    // The stalled step is the thread's `step`-th: inside call i if that call began before it and ended at or after it.
    if (steps[2 * i]! < stall.step && stall.step <= steps[2 * i + 1]!) call.presumedDead = true;
  });
}
