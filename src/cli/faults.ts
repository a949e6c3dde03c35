/**
 * Which demo jobs misbehave, and how: decided up front from a seed, so a run
 * can be replayed exactly. The plan travels in each job's payload; the
 * handler (workers/thumbnail-handlers.js) acts it out.
 *
 * | fault       | what the handler does                                     | expected end |
 * | ----------- | --------------------------------------------------------- | ------------ |
 * | `transient` | throws on its first 1 or 2 attempts                       | SUCCEEDED    |
 * | `crash`     | `process.exit()` in the pool thread on attempt 1          | SUCCEEDED    |
 * | `hang`      | busy-loops on attempt 1: the thread is terminated         | SUCCEEDED    |
 * | `stall`     | blocks past its lease on attempt 1, but not long enough   | SUCCEEDED    |
 * |             | for the watchdog: a zombie whose late settle is refused   |              |
 * | `poison`    | its source PNG is corrupt: PermanentError                 | DEAD         |
 */

import { prng } from './random.js';

export const FAULTS = ['transient', 'crash', 'hang', 'stall', 'poison'] as const;
export type Fault = (typeof FAULTS)[number];
export type FaultRates = Record<Fault, number>;

export interface PlannedFault {
  fault: Fault | 'none';
  /** For `transient`: how many first attempts fail (1 or 2); otherwise 0. */
  failAttempts: number;
}

/** How many of `jobs` get each fault: round(rate × jobs), never more than the jobs there are. */
export function faultCounts(jobs: number, rates: FaultRates): Record<Fault, number> {
  let left = jobs;
  const counts = {} as Record<Fault, number>;
  for (const fault of FAULTS) {
    counts[fault] = Math.min(left, Math.round(rates[fault] * jobs));
    left -= counts[fault];
  }
  return counts;
}

/**
 * The fault of each of `jobs` jobs: exactly `faultCounts` of each kind, placed
 * by a seeded shuffle. The same (jobs, rates, seed) always gives the same plan.
 */
export function planFaults(jobs: number, rates: FaultRates, seed: number): PlannedFault[] {
  const random = prng(seed);
  const order = Array.from({ length: jobs }, (_, i) => i);
  for (let i = jobs - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const plan: PlannedFault[] = Array.from({ length: jobs }, () => ({ fault: 'none', failAttempts: 0 }));
  let next = 0;
  const counts = faultCounts(jobs, rates);
  for (const fault of FAULTS) {
    for (let n = 0; n < counts[fault]; n++) {
      plan[order[next++]!] = { fault, failAttempts: fault === 'transient' ? 1 + Math.floor(random() * 2) : 0 };
    }
  }
  return plan;
}
