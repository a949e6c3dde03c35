/**
 * `npm run bench [-- SUITE...]`: runs the suites in one process, prints the
 * conditions first, then each suite's tables, and writes bench/results/.
 *
 *   npm run bench                 every suite
 *   npm run bench -- single drain  only those (by id, or else by a word of the title)
 *   BENCH_QUICK=1 npm run bench   fewer jobs, short budgets: a smoke test
 */
import { fileURLToPath } from 'node:url';
import { machineConditions } from './conditions.js';
import { pollAtDepth } from './depth.js';
import { drain } from './drain.js';
import { groupCommit } from './group-commit.js';
import { journal } from './journal.js';
import { redisScale } from './redis-scale.js';
import { redis } from './redis.js';
import { type Suite, printConditions, printSuite, writeResults } from './report.js';
import { singleThread } from './single-thread.js';

const SUITES: readonly Suite[] = [singleThread, pollAtDepth, drain, journal, groupCommit, redis, redisScale];
const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

function selected(filters: readonly string[]): Suite[] {
  if (filters.length === 0) return [...SUITES];
  // A filter picks the suites whose id starts with it; only if there are none, those with it in their title
  // (so `journal` is the journal suite, not also the group-commit suite whose title says "journal").
  const matches = (filter: string): readonly Suite[] => {
    const word = filter.toLowerCase();
    const byId = SUITES.filter((suite) => suite.id.startsWith(word));
    return byId.length > 0 ? byId : SUITES.filter((suite) => suite.title.toLowerCase().includes(word));
  };
  const picked = SUITES.filter((suite) => filters.some((filter) => matches(filter).includes(suite)));
  if (picked.length === 0) {
    throw new Error(`No suite matches ${filters.join(', ')}; the suites are ${SUITES.map((suite) => suite.id).join(', ')}`);
  }
  return picked;
}

async function main(): Promise<void> {
  const suites = selected(process.argv.slice(2));
  const conditions = machineConditions();
  printConditions('Conditions', conditions);
  printConditions('Suite settings', Object.assign({}, ...suites.map((suite) => suite.config)));
  for (const suite of suites) {
    const result = await suite.run();
    printSuite(suite, result);
    writeResults(RESULTS_DIR, conditions, suite, result);
  }
  console.log(`\nResults written to ${RESULTS_DIR}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
