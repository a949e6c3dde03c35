/** The demo's closing report: summary table, dead letters, verdict. */
import type { JobView } from '../index.js';
import type { Accounting } from './accounting.js';
import { FAULTS, type Fault } from './faults.js';
import { oneLine, table } from './table.js';

export interface DemoSummary {
  submitted: number;
  succeeded: number;
  dead: number;
  attempts: number;
  restarts: number;
  refused: number;
  elapsedMillis: number;
  planned: Record<Fault, number>;
}

export function formatSummary(s: DemoSummary): string {
  const seconds = s.elapsedMillis / 1000;
  const faults = FAULTS.map((fault) => `${fault} ${s.planned[fault]}`).join(', ');
  return [
    'Summary',
    table([
      ['submitted', String(s.submitted)],
      ['succeeded', String(s.succeeded)],
      ['dead', String(s.dead)],
      ['total attempts', String(s.attempts)],
      ['restarts', String(s.restarts)],
      ['refused zombie completes', String(s.refused)],
      ['elapsed', `${seconds.toFixed(2)} s`],
      ['throughput', `${((s.succeeded + s.dead) / seconds).toFixed(1)} jobs/s`],
    ]),
    `  faults planned: ${faults}`,
  ].join('\n');
}

/** The dead-letter list: id, attempts, planned fault, last error. */
export function formatDeadLetters(dead: readonly JobView[], faultOf: (view: JobView) => string): string {
  if (dead.length === 0) return 'Dead letters: none';
  const rows = dead.map((view) => [view.id, `${view.attempts} att.`, faultOf(view), oneLine(view.lastError ?? '')]);
  return [`Dead letters (${dead.length})`, table([['id', 'attempts', 'fault', 'last error'], ...rows])].join('\n');
}

export function formatVerdict(accounting: Accounting, submitted: number): string {
  if (accounting.ok) {
    return `OK: all ${submitted} jobs accounted for (${accounting.succeeded} succeeded with valid thumbnails, ${accounting.dead} dead), none succeeded twice`;
  }
  const shown = accounting.problems.slice(0, 20);
  const more = accounting.problems.length - shown.length;
  return [
    `FAILED: ${accounting.problems.length} problem(s)`,
    ...shown.map((problem) => `  - ${problem}`),
    ...(more > 0 ? [`  ... and ${more} more`] : []),
  ].join('\n');
}
