/**
 * What a suite hands back, and how it is shown: printed as tables, written to
 * `bench/results/<suite>.json` and drawn as `bench/results/<suite>.svg`.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Bench, Task } from 'tinybench';

export type Cell = string | number;
export type Row = Record<string, Cell>;

export interface Suite {
  /** Short name, used to pick suites on the command line and to name result files. */
  readonly id: string;
  readonly title: string;
  /** The suite's own conditions (capacity, job counts, threads), printed before anything runs. */
  readonly config: Row;
  run(): Promise<SuiteResult>;
}

export interface SuiteResult {
  /** Printed in order, each under its title. */
  readonly tables: ReadonlyArray<{ readonly title: string; readonly rows: readonly Row[] }>;
  /** One bar per case in the chart: a rate, higher is better. Baselines are drawn grey. */
  readonly bars: ReadonlyArray<{ readonly label: string; readonly value: number; readonly baseline?: boolean }>;
  readonly unit: string;
  /** The bars are costs (e.g. bytes), not rates; the chart says lower is better. */
  readonly lowerIsBetter?: boolean;
  /** Headline ratios, e.g. `leasehold / fastq`. */
  readonly ratios: Readonly<Record<string, number>>;
  /** Anything odd the suite saw in the engine (wrong counts, spurious empty polls). */
  readonly notes: readonly string[];
  /** The targets this suite measures, each shown as met or not met. */
  readonly targets?: readonly Target[];
}

/** A measured value against the bound it must reach: a ratio (`x`) or bytes (`B`). */
export interface Target {
  readonly measure: string;
  readonly value: number;
  readonly bound: 'at least' | 'at most';
  readonly goal: number;
  readonly unit: 'x' | 'B';
}

export function atLeast(measure: string, value: number, goal: number): Target {
  return { measure, value, bound: 'at least', goal, unit: 'x' };
}

/** A ratio that must not exceed `goal` (a latency against a peer's). */
export function atMost(measure: string, value: number, goal: number): Target {
  return { measure, value, bound: 'at most', goal, unit: 'x' };
}

export function atMostBytes(measure: string, value: number, goal: number): Target {
  return { measure, value, bound: 'at most', goal, unit: 'B' };
}

export function targetMet(target: Target): boolean {
  return target.bound === 'at least' ? target.value >= target.goal : target.value <= target.goal;
}

function formatTargetValue(value: number, unit: Target['unit']): string {
  return unit === 'x' ? formatRatio(value) : `${value.toFixed(1)} B`;
}

function targetRow(target: Target): Row {
  return {
    measure: target.measure,
    measured: formatTargetValue(target.value, target.unit),
    target: `${target.bound === 'at least' ? '>=' : '<='} ${formatTargetValue(target.goal, target.unit)}`,
    result: targetMet(target) ? 'met' : 'NOT MET',
  };
}

export interface Rates {
  readonly mean: number;
  readonly median: number;
}

/**
 * Operations per second of a tinybench case. `mean` (1 / mean latency) is what
 * a caller doing this in a loop gets, stalls included; `median` (1 / median
 * latency) is the typical call, which stalls and a busy machine barely move.
 */
export function opsPerSecond(task: Task): Rates {
  const latency = latencyOf(task);
  return { mean: 1000 / latency.mean, median: 1000 / latency.p50 };
}

/** A tinybench case's latency statistics (ms); throws if the case did not complete. */
export function latencyOf(task: Task): { mean: number; p50: number; samplesCount: number } {
  const result = task.result;
  if (result.state !== 'completed') {
    const why = result.state === 'errored' ? result.error.message : result.state;
    throw new Error(`benchmark case "${task.name}" did not complete: ${why}`);
  }
  return result.latency;
}

/** tinybench's own table, as `bench.table()` makes it (latency in ns, throughput in ops/s). */
export function tinybenchRows(bench: Bench): Row[] {
  return bench.table() as Row[];
}

export function formatRate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

export function formatRatio(value: number): string {
  return `${value >= 10 ? value.toFixed(1) : value >= 0.1 ? value.toFixed(2) : value.toPrecision(2)}x`;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function printConditions(title: string, row: Row): void {
  console.log(`\n${title}`);
  console.table(Object.entries(row).map(([name, value]) => ({ condition: name, value })));
}

/** A suite's header, printed before it runs: the load it starts under, since other work skews its numbers. */
export function printSuiteStart(suite: Suite, loadAverage: string): void {
  console.log(`\n=== ${suite.title} ===`);
  console.log(`load average 1/5/15 min at its start: ${loadAverage}`);
}

export function printSuite(result: SuiteResult): void {
  for (const table of result.tables) {
    console.log(`\n${table.title}`);
    console.table(table.rows);
  }
  for (const [name, ratio] of Object.entries(result.ratios)) console.log(`ratio ${name}: ${formatRatio(ratio)}`);
  if (result.targets !== undefined && result.targets.length > 0) {
    console.log('\ntargets');
    console.table(result.targets.map(targetRow));
  }
  for (const note of result.notes) console.log(`NOTE: ${note}`);
}

/** Every target of the suites that ran, in one table, and how many were met. */
export function printTargetSummary(runs: ReadonlyArray<{ readonly suite: Suite; readonly result: SuiteResult }>, mode: Cell): void {
  const targets = runs.flatMap(({ suite, result }) => (result.targets ?? []).map((target) => ({ suite: suite.id, target })));
  console.log(`\n=== Targets (mode: ${mode}) ===`);
  if (targets.length === 0) {
    console.log('none of the suites that ran has a target');
    return;
  }
  console.table(targets.map(({ suite, target }): Row => ({ suite, ...targetRow(target) })));
  const met = targets.filter(({ target }) => targetMet(target)).length;
  console.log(`${met} of ${targets.length} targets met`);
}

/**
 * Writes `<id>.json` and `<id>.svg`; each file goes through a `.tmp` so a crash leaves no half file.
 * `loadAtStart` is the load average when the suite began (the conditions' figure is the run's start).
 */
export function writeResults(dir: string, conditions: Row, loadAtStart: string, suite: Suite, result: SuiteResult): void {
  mkdirSync(dir, { recursive: true });
  const targets = (result.targets ?? []).map((target) => ({ ...target, met: targetMet(target) }));
  const json = { suite: suite.id, title: suite.title, conditions, loadAtStart, config: suite.config, ...result, targets };
  writeAtomically(join(dir, `${suite.id}.json`), `${JSON.stringify(json, null, 2)}\n`);
  const footer = ['node', 'cpu', 'cores', 'load average 1/5/15 min', 'date'].map((key) => `${key} ${String(conditions[key])}`).join(' · ');
  const subtitle = `${result.unit}, ${result.lowerIsBetter === true ? 'lower' : 'higher'} is better`;
  writeAtomically(join(dir, `${suite.id}.svg`), barChart(suite.title, subtitle, result.bars, footer));
}

function writeAtomically(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

const CHART = { width: 760, labelWidth: 300, valueWidth: 130, barHeight: 26, gap: 10, top: 62, bottom: 40 } as const;
const COLORS = { leasehold: '#2f6fb0', baseline: '#9aa5b1' } as const;

/** A horizontal bar chart, one bar per case, its value written at the end of each bar. */
export function barChart(title: string, subtitle: string, bars: SuiteResult['bars'], footer: string): string {
  const { width, labelWidth, valueWidth, barHeight, gap, top, bottom } = CHART;
  const height = top + bars.length * (barHeight + gap) + bottom;
  const scale = (width - labelWidth - valueWidth) / Math.max(...bars.map((bar) => bar.value), 1);
  const rows = bars.map((bar, i) => {
    const y = top + i * (barHeight + gap);
    const length = Math.max(1, bar.value * scale);
    const text = y + barHeight / 2 + 5;
    return [
      `<text x="${labelWidth - 8}" y="${text}" text-anchor="end">${escapeXml(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y}" width="${length.toFixed(1)}" height="${barHeight}" fill="${bar.baseline === true ? COLORS.baseline : COLORS.leasehold}"/>`,
      `<text x="${(labelWidth + length + 6).toFixed(1)}" y="${text}">${formatRate(bar.value)}</text>`,
    ].join('\n  ');
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="13">`,
    `  <rect width="100%" height="100%" fill="#fff"/>`,
    `  <text x="12" y="24" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    `  <text x="12" y="44" fill="#555">${escapeXml(subtitle)}</text>`,
    `  ${rows.join('\n  ')}`,
    `  <text x="12" y="${height - 14}" fill="#555" font-size="11">${escapeXml(footer)}</text>`,
    `</svg>`,
    '',
  ].join('\n');
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
