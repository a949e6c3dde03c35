/** Repeated timed runs of several cases, interleaved so that a noisy spell of the machine falls on all of them. */
import { Bench, type Task } from 'tinybench';
import { type Rates, type Row, latencyOf, median } from './report.js';

/**
 * `warmups` untimed rounds (one unless told), then `runs` timed rounds; each
 * round runs every case once, in order. Returns each case's timed results
 * (what `runOnce` returned).
 */
export async function interleavedRuns<C>(cases: readonly C[], runs: number, runOnce: (c: C) => Promise<number>, warmups = 1): Promise<Map<C, number[]>> {
  const results = new Map<C, number[]>(cases.map((c) => [c, []]));
  for (let round = 0; round < warmups + runs; round++) {
    for (const c of cases) {
      const result = await runOnce(c);
      if (round >= warmups) results.get(c)!.push(result);
    }
  }
  return results;
}

/** Jobs per second of a case that drained `jobs` in each of its runs, from the median run time. */
export function drainRate(jobs: number, runMillis: readonly number[]): number {
  return (jobs / median(runMillis)) * 1000;
}

/** Each case's task in every round, and tinybench's rows of every round (a `round` column first). */
export interface BenchRounds {
  readonly cases: Task[][];
  readonly rows: Row[];
}

/**
 * tinybench cases run in `rounds` turns: each round is a Bench of its own,
 * made by `addCases`, with 1/`rounds` of the time budget per case. A case
 * that runs in a busy spell then shares it with the others, where a single
 * Bench would give the whole spell to whichever case ran at the time.
 */
export async function interleavedBenches(rounds: number, budget: { time: number; warmupTime: number }, addCases: (bench: Bench) => void): Promise<BenchRounds> {
  const cases: Task[][] = [];
  const rows: Row[] = [];
  for (let round = 1; round <= rounds; round++) {
    const bench = new Bench({ time: budget.time / rounds, warmupTime: budget.warmupTime / rounds, throws: true });
    addCases(bench);
    await bench.run();
    bench.tasks.forEach((task, i) => (cases[i] ??= []).push(task));
    for (const row of bench.table() as Row[]) rows.push({ round, ...row });
  }
  return { cases, rows };
}

/**
 * A case's rates over its rounds: `mean` from the mean latency of all its
 * samples together, `median` from the median of the rounds' median latencies.
 */
export function pooledRates(rounds: readonly Task[]): Rates {
  let samples = 0;
  let time = 0;
  const medians: number[] = [];
  for (const task of rounds) {
    const latency = latencyOf(task);
    samples += latency.samplesCount;
    time += latency.mean * latency.samplesCount;
    medians.push(latency.p50);
  }
  return { mean: (1000 * samples) / time, median: 1000 / median(medians) };
}
