/** The command line of `npm run bench`: which suites to run, and whether to save their results. */
import type { Suite } from './report.js';

export const SAVE_FLAG = '--save';

/** A mistake on the command line: printed as its message alone, no stack. */
export class UsageError extends Error {}

export interface Args {
  readonly filters: readonly string[];
  readonly save: boolean;
}

/** `quick`: a BENCH_QUICK run, whose numbers must never replace a full run's committed results. */
export function parseArgs(argv: readonly string[], quick: boolean): Args {
  const flags = argv.filter((arg) => arg.startsWith('--'));
  const unknown = flags.filter((flag) => flag !== SAVE_FLAG);
  if (unknown.length > 0) throw new UsageError(`Unknown option ${unknown.join(', ')}; the only option is ${SAVE_FLAG}`);
  const save = flags.includes(SAVE_FLAG);
  if (save && quick) throw new UsageError(`${SAVE_FLAG} is refused with BENCH_QUICK=1: a smoke run's numbers would overwrite the committed results`);
  return { filters: argv.filter((arg) => !arg.startsWith('--')), save };
}

/**
 * The suites the filters pick, in the order of `suites`; all of them without filters.
 * A filter picks the suite with exactly that id; else those whose id starts with it; else those with it in
 * their title. So `journal` is the journal suite alone, `journal-` the journal-submit one.
 */
export function selectSuites(suites: readonly Suite[], filters: readonly string[]): Suite[] {
  if (filters.length === 0) return [...suites];
  const matches = (filter: string): readonly Suite[] => {
    const word = filter.toLowerCase();
    const exact = suites.filter((suite) => suite.id === word);
    if (exact.length > 0) return exact;
    const byId = suites.filter((suite) => suite.id.startsWith(word));
    return byId.length > 0 ? byId : suites.filter((suite) => suite.title.toLowerCase().includes(word));
  };
  const picked = suites.filter((suite) => filters.some((filter) => matches(filter).includes(suite)));
  if (picked.length === 0) {
    throw new UsageError(`No suite matches ${filters.join(', ')}; the suites are ${suites.map((suite) => suite.id).join(', ')}`);
  }
  return picked;
}
