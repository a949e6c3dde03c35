/** Repeated timed runs of several cases, interleaved so that a noisy spell of the machine falls on all of them. */
import { median } from './report.js';

/**
 * One warmup round, then `runs` timed rounds; each round runs every case once,
 * in order. Returns each case's timed results (what `runOnce` returned).
 */
export async function interleavedRuns<C>(cases: readonly C[], runs: number, runOnce: (c: C) => Promise<number>): Promise<Map<C, number[]>> {
  const results = new Map<C, number[]>(cases.map((c) => [c, []]));
  for (let round = 0; round <= runs; round++) {
    for (const c of cases) {
      const result = await runOnce(c);
      if (round > 0) results.get(c)!.push(result);
    }
  }
  return results;
}

/** Jobs per second of a case that drained `jobs` in each of its runs, from the median run time. */
export function drainRate(jobs: number, runMillis: readonly number[]): number {
  return (jobs / median(runMillis)) * 1000;
}
