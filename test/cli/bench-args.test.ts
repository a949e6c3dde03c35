import { describe, expect, it } from 'vitest';
import { UsageError, parseArgs, selectSuites } from '../../bench/args.js';
import { atLeast, atMostBytes, targetMet, type Suite } from '../../bench/report.js';

const suite = (id: string, title: string): Suite => ({ id, title, config: {}, run: () => Promise.reject(new Error('not run')) });
const SUITES = [
  suite('single', 'single thread: jobs through a fresh queue'),
  suite('journal-submit', 'journal submit: durable submit vs raw better-sqlite3'),
  suite('journal', 'journal lifecycle vs BullMQ'),
  suite('group', 'group commit: threads writing one journal'),
];
const ids = (picked: readonly Suite[]) => picked.map((s) => s.id);

describe('npm run bench arguments', () => {
  it('saves results only when --save is given', () => {
    expect(parseArgs(['single', 'drain'], false)).toEqual({ filters: ['single', 'drain'], save: false });
    expect(parseArgs(['--save', 'single'], false)).toEqual({ filters: ['single'], save: true });
  });

  it('refuses --save on a quick run, so smoke numbers never overwrite committed results', () => {
    expect(() => parseArgs(['--save'], true)).toThrow(UsageError);
    expect(parseArgs(['single'], true)).toEqual({ filters: ['single'], save: false });
  });

  it('refuses an unknown option by name', () => {
    expect(() => parseArgs(['--sav'], false)).toThrow(/Unknown option --sav/);
  });
});

describe('suite filters', () => {
  it('runs every suite, in order, without a filter', () => {
    expect(ids(selectSuites(SUITES, []))).toEqual(['single', 'journal-submit', 'journal', 'group']);
  });

  it('picks the suite whose id is the filter before those whose id starts with it', () => {
    expect(ids(selectSuites(SUITES, ['journal']))).toEqual(['journal']);
    expect(ids(selectSuites(SUITES, ['journal-']))).toEqual(['journal-submit']);
  });

  it('falls back to a word of the title when no id matches', () => {
    expect(ids(selectSuites(SUITES, ['commit']))).toEqual(['group']);
  });

  it('names the suites when a filter matches none', () => {
    expect(() => selectSuites(SUITES, ['nosuch'])).toThrow(/the suites are single, journal-submit, journal, group/);
  });
});

describe('targets', () => {
  it('meets a lower bound at or above it, and not below', () => {
    expect(targetMet(atLeast('ratio', 1.6, 1.6))).toBe(true);
    expect(targetMet(atLeast('ratio', 1.59, 1.6))).toBe(false);
  });

  it('meets an upper bound at or below it, and not above', () => {
    expect(targetMet(atMostBytes('bytes', 96, 96))).toBe(true);
    expect(targetMet(atMostBytes('bytes', 96.5, 96))).toBe(false);
  });
});
