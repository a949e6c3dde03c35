/** The demo's closing report: summary table, dead letters, verdict. */
import type { JobView } from '../index.js';
import type { Accounting } from './accounting.js';
import { FAULTS, type Fault } from './faults.js';

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

/** Rows of cells as aligned columns; numbers (cells that look like one) are right-aligned. */
export function table(rows: readonly (readonly string[])[], indent = '  '): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) =>
      indent + row.map((cell, i) => (/^-?[\d.,]+( \S+)?$/.test(cell) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd(),
    )
    .join('\n');
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

function oneLine(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
