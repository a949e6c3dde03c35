/**
 * The busy work of the "work" suite and of compare-builds.ts: `spin` steps
 * (drain-loop.mjs), calibrated on the main thread so that one call takes a
 * given number of microseconds here.
 */
import { performance } from 'node:perf_hooks';
import { spin } from './drain-loop.mjs';

/** Calls per calibration sample: short, so that some samples run uninterrupted even on a busy machine. */
export const SAMPLE_CALLS = 2_000;
export const SAMPLES = 25;

/** The iteration count that makes one `spin` call take about `targetMicros` here, and the time it then takes. */
export function calibrate(targetMicros: number): { iterations: number; micros: number } {
  let iterations = 1_000;
  microsPerCall(iterations); // let the JIT compile `spin` before anything is timed
  for (let step = 0; step < 5; step++) iterations = Math.max(1, Math.round((iterations * targetMicros) / microsPerCall(iterations)));
  return { iterations, micros: microsPerCall(iterations) };
}

/**
 * The microseconds one `spin(iterations)` call takes: the fastest of SAMPLES
 * samples, since a slower one was interrupted by other work on the machine and
 * a job's busy work is meant as CPU time.
 */
function microsPerCall(iterations: number): number {
  const samples: number[] = [];
  let sink = 0;
  for (let sample = 0; sample < SAMPLES; sample++) {
    const start = performance.now();
    for (let call = 0; call < SAMPLE_CALLS; call++) sink ^= spin(iterations);
    samples.push(((performance.now() - start) * 1000) / SAMPLE_CALLS);
  }
  // The sink feeds a branch so that the calls cannot be dropped as dead code; it is never 0.5.
  return sink === 0.5 ? Number.NaN : Math.min(...samples);
}
