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
import { QUICK, loadAverage, machineConditions } from './conditions.js';
import { pollAtDepth } from './depth.js';
import { drain } from './drain.js';
import { groupCommit } from './group-commit.js';
import { journalSubmit } from './journal-submit.js';
import { journal } from './journal.js';
import { memory } from './memory.js';
import { redis } from './redis.js';
import { type Suite, type SuiteResult, printConditions, printSuite, printSuiteStart, printTargetSummary, writeResults } from './report.js';
import { singleThread } from './single-thread.js';
import { work } from './work.js';

/** The table in its order, then the journal, group-commit and Redis comparisons. */
const SUITES: readonly Suite[] = [singleThread, drain, work, journalSubmit, memory, pollAtDepth, journal, groupCommit, redis];
const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const SAVE_FLAG = '--save';

/** A mistake on the command line: printed as its message alone, no stack. */
class UsageError extends Error {}

interface Args {
  readonly filters: readonly string[];
  readonly save: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const flags = argv.filter((arg) => arg.startsWith('--'));
  const unknown = flags.filter((flag) => flag !== SAVE_FLAG);
  if (unknown.length > 0) throw new UsageError(`Unknown option ${unknown.join(', ')}; the only option is ${SAVE_FLAG}`);
  const save = flags.includes(SAVE_FLAG);
  // Short runs are smoke tests: their numbers must never replace a full run's committed results.
  if (save && QUICK) throw new UsageError(`${SAVE_FLAG} is refused with BENCH_QUICK=1: a smoke run's numbers would overwrite the committed results`);
  return { filters: argv.filter((arg) => !arg.startsWith('--')), save };
}

function selected(filters: readonly string[]): Suite[] {
  if (filters.length === 0) return [...SUITES];
  // A filter picks the suite with exactly that id; else those whose id starts with it; else those with it in
  // their title. So `journal` is the journal suite alone, `journal-` the journal-submit one.
  const matches = (filter: string): readonly Suite[] => {
    const word = filter.toLowerCase();
    const exact = SUITES.filter((suite) => suite.id === word);
    if (exact.length > 0) return exact;
    const byId = SUITES.filter((suite) => suite.id.startsWith(word));
    return byId.length > 0 ? byId : SUITES.filter((suite) => suite.title.toLowerCase().includes(word));
  };
  const picked = SUITES.filter((suite) => filters.some((filter) => matches(filter).includes(suite)));
  if (picked.length === 0) {
    throw new UsageError(`No suite matches ${filters.join(', ')}; the suites are ${SUITES.map((suite) => suite.id).join(', ')}`);
  }
  return picked;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const suites = selected(args.filters);
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
