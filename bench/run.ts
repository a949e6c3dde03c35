/**
 * `npm run bench [-- [--save] SUITE...]`: runs the suites in one process,
 * prints the conditions first, then each suite's tables and targets, and ends
 * with every target of the run, met or not.
 *
 *   npm run bench                  every suite; results are printed only
 *   npm run bench -- single drain  only those (by id, or else by a word of the title)
 *   npm run bench -- --save        also writes bench/results/<suite>.json and .svg
 *   BENCH_QUICK=1 npm run bench    fewer jobs, short budgets: a smoke test (never saved)
 */
import { fileURLToPath } from 'node:url';
import { SAVE_FLAG, UsageError, parseArgs, selectSuites } from './args.js';
import { QUICK, loadAverage, machineConditions } from './conditions.js';
import { pollAtDepth } from './depth.js';
import { drain } from './drain.js';
import { features } from './features.js';
import { groupCommit } from './group-commit.js';
import { journalSubmit } from './journal-submit.js';
import { journal } from './journal.js';
import { memory } from './memory.js';
import { metrics } from './metrics.js';
import { poolEvents } from './pool-events.js';
import { poolBytes } from './pool-bytes.js';
import { poolImages } from './pool-images.js';
import { poolProgress } from './pool-progress.js';
import { poolWake } from './pool-wake.js';
import { redisScale } from './redis-scale.js';
import { redis } from './redis.js';
import { type Suite, type SuiteResult, printConditions, printSuite, printSuiteStart, printTargetSummary, writeResults } from './report.js';
import { singleThread } from './single-thread.js';
import { work } from './work.js';

/** The issue's table in its order, then the journal, group-commit and Redis comparisons, then the pool's events and metrics, then what #13's job features cost. */
const SUITES: readonly Suite[] = [singleThread, drain, work, journalSubmit, memory, pollAtDepth, journal, groupCommit, redis, redisScale, poolEvents, poolWake, poolImages, poolBytes, poolProgress, metrics, features];
const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2), QUICK);
  const suites = selectSuites(SUITES, args.filters);
  const conditions = machineConditions();
  printConditions('Conditions', conditions);
  printConditions('Suite settings', Object.assign({}, ...suites.map((suite) => suite.config)));
  const runs: Array<{ suite: Suite; result: SuiteResult }> = [];
  for (const suite of suites) {
    const loadAtStart = loadAverage();
    printSuiteStart(suite, loadAtStart);
    const result = await suite.run();
    printSuite(result);
    if (args.save) writeResults(RESULTS_DIR, conditions, loadAtStart, suite, result);
    runs.push({ suite, result });
  }
  printTargetSummary(runs, conditions['mode']!);
  console.log(args.save ? `\nResults written to ${RESULTS_DIR}` : `\nResults printed only; \`npm run bench -- ${SAVE_FLAG}\` writes them to ${RESULTS_DIR}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof UsageError ? `npm run bench: ${error.message}` : error);
  process.exitCode = 1;
});
