/**
 * The scheduled histories CI runs: options for each, from a base seed. Every
 * history is short (PCT's strength is depth, not length): 2 to 4 threads of
 * CALLS calls each, PCT of depth 1 to 3 or a random walk.
 */
import { prng } from '../../dist/cli/random.js';
import type { PlannedStall } from '../../dist/scheduling/scheduler.js';
import { LOCK_TIMEOUT_MILLIS, type ScheduledBackend, type ScheduledHistoryOptions } from './recorder.js';

export const CALLS = 5;
export const MAX_THREADS = 4;

export function historyPlan(base: number, i: number, backend: ScheduledBackend): ScheduledHistoryOptions {
  const seed = (base + i) >>> 0;
  const random = prng(seed ^ 0x5bd1e995);
  const threads = 2 + Math.floor(random() * (MAX_THREADS - 1));
  return random() < 0.8
    ? { seed, backend, threads, calls: CALLS, strategy: 'pct', depth: 1 + Math.floor(random() * 3) }
    : { seed, backend, threads, calls: CALLS, strategy: 'random' };
}

/**
 * The same, with one thread stalled past the queue's patience at a random
 * step (in one history of four, two): presumed dead, its lock or call taken
 * over, it wakes later to find it so and goes on.
 */
export function stallPlan(base: number, i: number, backend: ScheduledBackend): ScheduledHistoryOptions {
  const options = historyPlan(base, i, backend);
  const random = prng(options.seed ^ 0x27d4eb2f);
  // Past the patience, doubled at most twice by earlier misjudgements within the history.
  const stall = (): PlannedStall => ({ thread: Math.floor(random() * options.threads), step: 1 + Math.floor(random() * CALLS * 30), millis: LOCK_TIMEOUT_MILLIS * 5 });
  const first = stall();
  // One history in four stalls a second thread (or the same one again): two threads taken for dead, each
  // coming back to its rows and locks revoked, while the other may be in the middle of its own return.
  options.stall = random() < 0.25 ? [first, stall()] : first;
  return options;
}

/**
 * The same, with one thread held at a random step until another thread has
 * taken a random number of steps: the held thread's next step lands inside
 * the other's call (a claim between its clock reading and its CAS, a move
 * between its CAS and its registration), where PCT rarely switches.
 */
export function holdPlan(base: number, i: number, backend: ScheduledBackend): ScheduledHistoryOptions {
  const options = historyPlan(base, i, backend);
  const random = prng(options.seed ^ 0x165667b1);
  const thread = Math.floor(random() * options.threads);
  const partner = (thread + 1 + Math.floor(random() * (options.threads - 1))) % options.threads;
  options.hold = { thread, step: 1 + Math.floor(random() * CALLS * 30), until: { thread: partner, step: 1 + Math.floor(random() * CALLS * 40) } };
  return options;
}

/**
 * The same, with one thread ended at a random step, as `worker.terminate()`
 * ends it: inside a claim, a move, a lock hold, or past its last call (then
 * nothing is killed).
 */
export function killPlan(base: number, i: number, backend: ScheduledBackend): ScheduledHistoryOptions {
  const options = historyPlan(base, i, backend);
  const random = prng(options.seed ^ 0x1b873593);
  options.kill = { thread: Math.floor(random() * options.threads), step: 1 + Math.floor(random() * CALLS * 30) };
  return options;
}

/** LEASEHOLD_SCHEDULE='{...}' replays one history (the options a failure prints). */
export function replayed(): ScheduledHistoryOptions | undefined {
  const text = process.env['LEASEHOLD_SCHEDULE'];
  return text === undefined || text === '' ? undefined : (JSON.parse(text) as ScheduledHistoryOptions);
}

/** The histories a suite runs on `backend`: `count` from its plan, or only the one replayed (if it is of that backend). */
export function plansFor(backend: ScheduledBackend, count: number, plan: (i: number) => ScheduledHistoryOptions): ScheduledHistoryOptions[] {
  const only = replayed();
  if (only !== undefined) return only.backend === backend ? [only] : [];
  return Array.from({ length: count }, (_, i) => plan(i));
}
