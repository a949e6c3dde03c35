/**
 * How the scheduler picks the thread that takes the next step, from a seed.
 *
 * - `pct`: Burckhardt, Kothari, Musuvathi and Nagarakatte, "A Randomized
 *   Scheduler with Probabilistic Guarantees of Finding Bugs" (ASPLOS 2010).
 *   The n threads get distinct random priorities d … d+n−1; d−1 change
 *   points are drawn among the first `steps` steps; the highest-priority
 *   thread that can run takes every step, and at the i-th change point the
 *   thread that took it drops to priority d−i. A bug that needs d ordering
 *   constraints is found with probability at least 1/(n·k^(d−1)) per run.
 * - `random`: any thread that can run, uniformly.
 *
 * PCT runs one thread for as long as it can, and the core's threads spin
 * (boundedly) on words that another thread must change: a thread that takes
 * SPIN_GUARD steps in a row while another could run drops below every other,
 * as at a change point, so a spinning thread never starves the one it waits
 * for. The drop is a function of the steps alone, so a seed still replays.
 */
import { prng } from '../cli/random.js';

export interface Strategy {
  /** A history begins with these threads. */
  begin(threads: number): void;
  /** The thread (one of `enabled`, never empty) to take step `index` of the history. */
  pick(enabled: readonly number[], index: number): number;
}

export interface PctOptions {
  /** The bug depth the strategy aims at: d−1 priority change points. */
  depth: number;
  /** The number of steps the change points are drawn among (about the steps of one history). */
  steps: number;
}

/** Consecutive steps of one thread, while others could run, before it yields to all of them. */
export const SPIN_GUARD = 200;

export function pct(seed: number, { depth, steps }: PctOptions): Strategy {
  const random = prng(seed);
  let priority: number[] = [];
  let changes: number[] = [];
  let lowest = 0;
  let last = -1;
  let run = 0;
  const demote = (thread: number): void => {
    priority[thread] = --lowest;
  };
  return {
    begin(threads) {
      // Priorities depth … depth+threads−1, dealt at random (Fisher–Yates).
      priority = Array.from({ length: threads }, (_, i) => depth + i);
      for (let i = threads - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [priority[i], priority[j]] = [priority[j]!, priority[i]!];
      }
      changes = Array.from({ length: depth - 1 }, () => 1 + Math.floor(random() * steps)).sort((a, b) => a - b);
      lowest = depth;
      last = -1;
      run = 0;
    },
    pick(enabled, index) {
      // At a change point, the thread that took the step before drops below the initial priorities.
      while (changes.length > 0 && changes[0]! <= index) {
        changes.shift();
        if (last >= 0) demote(last);
      }
      if (run >= SPIN_GUARD && enabled.length > 1 && enabled.includes(last)) {
        demote(last);
        run = 0;
      }
      let best = enabled[0]!;
      for (const thread of enabled) if (priority[thread]! > priority[best]!) best = thread;
      run = best === last ? run + 1 : 1;
      last = best;
      return best;
    },
  };
}

export function randomWalk(seed: number): Strategy {
  const random = prng(seed);
  return {
    begin() {},
    pick(enabled) {
      return enabled[Math.floor(random() * enabled.length)]!;
    },
  };
}
