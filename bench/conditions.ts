/** The machine and the mode a benchmark run ran under, printed before any number. */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Row } from './report.js';

/** `BENCH_QUICK=1`: fewer jobs and shorter tinybench budgets, for a smoke test. */
export const QUICK = process.env['BENCH_QUICK'] === '1';

/** tinybench budgets per case, in milliseconds. */
export const BENCH_TIME = QUICK ? { time: 200, warmupTime: 50 } : { time: 2000, warmupTime: 500 };

export const MiB = 1024 * 1024;

/** The 1, 5 and 15 minute load averages, e.g. `0.12 / 0.30 / 0.41`. */
export function loadAverage(): string {
  return os.loadavg().map((load) => load.toFixed(2)).join(' / ');
}

export function machineConditions(): Row {
  const cpus = os.cpus();
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return {
    date: new Date().toISOString(),
    leasehold: pkg.version,
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    availableParallelism: os.availableParallelism(),
    memory: `${Math.round(os.totalmem() / 1024 ** 3)} GiB`,
    // Other work on the machine skews every number here; a load near 0 is a quiet machine.
    'load average 1/5/15 min': loadAverage(),
    mode: QUICK ? 'QUICK (BENCH_QUICK=1): smoke test, numbers not comparable' : 'full',
    'tinybench budget per case': `${BENCH_TIME.time} ms (+${BENCH_TIME.warmupTime} ms warmup)`,
  };
}
