/**
 * `leasehold demo`: the built CLI run end to end with every kind of
 * fault, and its accounting — the check behind its exit code — on made-up
 * outcomes, so that the exit-1 path is proven without provoking a real loss.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { account, type JobOutcome } from '../../dist/cli/demo.js';
import { faultCounts, planFaults } from '../../dist/cli/faults.js';
import { fitWithin } from '../../dist/cli/resize.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-demo-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function leasehold(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return leaseholdIn(tmpdir(), ...args);
}

/** The CLI with `tmp` as its temporary directory. */
function leaseholdIn(tmp: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 90_000, env: { ...process.env, TMPDIR: tmp } });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The number on a line of the summary table, e.g. `  dead   2`. */
function summaryCount(stdout: string, label: string): number {
  const match = new RegExp(`^  ${label} +(\\d+)$`, 'm').exec(stdout);
  if (match === null) throw new Error(`No "${label}" line in the summary:\n${stdout}`);
  return Number(match[1]);
}

describe('leasehold demo', () => {
  it('accounts for all 40 jobs under transient failures, crashes, hangs, stalls and poison, and exits 0', () => {
    const out = join(scratch, 'run');
    // A lease of 2 s: the pool takes a thread silent for a lease for hung, and on a loaded machine a
    // starved thread (or one still booting) can be silent for 500 ms without being hung.
    const run = leasehold(
      'demo', '--jobs', '40', '--threads', '2', '--size', '256', '--lease-ms', '2000', '--seed', '7', '--out', out,
      '--transient', '0.1', '--crash', '0.05', '--hang', '0.025', '--stall', '0.025', '--poison', '0.05',
    );
    expect(run.stderr).toBe('');
    expect(run.status, run.stdout).toBe(0);
    expect(run.stdout).toContain('faults planned: transient 4, crash 2, hang 1, stall 1, poison 2');
    const succeeded = summaryCount(run.stdout, 'succeeded');
    const dead = summaryCount(run.stdout, 'dead');
    expect(summaryCount(run.stdout, 'submitted')).toBe(40);
    expect(succeeded + dead).toBe(40);
    // The two poison jobs always die; a job that died otherwise would be named under "Notes".
    expect(dead).toBeGreaterThanOrEqual(2);
    // Every crash costs its thread. (A hung thread is replaced only after two silent leases; when the
    // queue drains sooner, close() terminates it, which is not counted as a restart.)
    expect(summaryCount(run.stdout, 'restarts')).toBeGreaterThanOrEqual(2);
    // At least one attempt per job, plus the planned failures of transient, crash, hang and stall jobs.
    expect(summaryCount(run.stdout, 'total attempts')).toBeGreaterThanOrEqual(40 + 4 + 2 + 1 + 1);
    expect(run.stdout).toMatch(/^Dead letters \(\d+\)$/m);
    expect(run.stdout).toContain('corrupt or truncated PNG');
    expect(run.stdout).toContain(`OK: all 40 jobs accounted for (${succeeded} succeeded with valid thumbnails, ${dead} dead)`);
    // Not a terminal: one progress line a second, and a last one with everything done.
    expect(run.stdout).toMatch(/^\[ *[\d.]+s\] Thumbnails 40\/40 \| pending 0 \| running 0 \|/m);
    expect(readdirSync(join(out, 'thumbs')).filter((name) => name.endsWith('.png'))).toHaveLength(succeeded);
  });

  it('exits 1 and says why when jobs are left unaccounted for (the queue did not drain in time)', () => {
    // Both jobs hang, and a 3 s lease outlasts the 1 s timeout: nothing finishes.
    const run = leasehold(
      'demo', '--jobs', '2', '--size', '64', '--lease-ms', '3000', '--timeout', '1', '--out', join(scratch, 'late'),
      '--hang', '1', '--transient', '0', '--crash', '0', '--stall', '0', '--poison', '0',
    );
    expect(run.status, run.stdout).toBe(1);
    expect(run.stdout).toContain('FAILED: ');
    expect(run.stdout).toContain('  - the queue did not drain within 1 s');
    expect(run.stdout).toContain('  - succeeded 0 + dead 0 = 0, not the 2 submitted');
  });

  it('removes its temporary folder at the end when no --out is given, whether it passes or fails', () => {
    const tmp = join(scratch, 'tmp');
    mkdirSync(tmp);
    const pass = leaseholdIn(tmp, 'demo', '--jobs', '4', '--size', '64', '--lease-ms', '2000', '--poison', '0.25',
      '--transient', '0', '--crash', '0', '--hang', '0', '--stall', '0');
    expect(pass.status, pass.stdout).toBe(0);
    const used = /^  output: (\S+) \(removed at the end/m.exec(pass.stdout)?.[1];
    expect(used?.startsWith(join(tmp, 'leasehold-demo-'))).toBe(true);
    expect(readdirSync(tmp)).toEqual([]);
    const fail = leaseholdIn(tmp, 'demo', '--jobs', '1', '--size', '64', '--lease-ms', '3000', '--timeout', '1', '--hang', '1',
      '--transient', '0', '--crash', '0', '--stall', '0', '--poison', '0');
    expect(fail.status, fail.stdout).toBe(1);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('refuses fault rates that add up to more than 1 with exit code 2', () => {
    const run = leasehold('demo', '--transient', '0.1', '--crash', '0.5', '--hang', '0', '--stall', '0', '--poison', '0.6');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('The fault rates add up to 1.2, more than 1');
  });

});

describe('demo accounting', () => {
  const ok = (id: string): JobOutcome => ({ id, status: 'SUCCEEDED', thumbnailProblem: null });
  const dead = (id: string): JobOutcome => ({ id, status: 'DEAD', thumbnailProblem: null });

  it('passes when succeeded + dead = submitted and each success is logged once', () => {
    const result = account({ submitted: 3, jobs: [ok('J1'), dead('J2'), ok('J3')], successLog: ['J3', 'J1'] });
    expect(result).toEqual({ ok: true, succeeded: 2, dead: 1, problems: [] });
  });

  it('fails when a job succeeded twice', () => {
    const result = account({ submitted: 2, jobs: [ok('J1'), ok('J2')], successLog: ['J1', 'J2', 'J1'] });
    expect(result.ok).toBe(false);
    expect(result.problems).toEqual(['J1 succeeded 2 times (success log)']);
  });

  it('fails when a submitted job has no outcome', () => {
    const result = account({ submitted: 3, jobs: [ok('J1'), dead('J2')], successLog: ['J1'] });
    expect(result.ok).toBe(false);
    expect(result.problems).toEqual([
      '3 jobs were submitted but 2 have an outcome',
      'succeeded 1 + dead 1 = 2, not the 3 submitted',
    ]);
  });

  it('fails when a job ended neither SUCCEEDED nor DEAD', () => {
    const result = account({
      submitted: 2,
      jobs: [ok('J1'), { id: 'J2', status: 'PENDING', thumbnailProblem: null }],
      successLog: ['J1'],
    });
    expect(result.ok).toBe(false);
    expect(result.problems).toContain('J2 ended PENDING, neither SUCCEEDED nor DEAD');
  });

  it('fails when a succeeded job has no valid thumbnail', () => {
    const result = account({
      submitted: 1,
      jobs: [{ id: 'J1', status: 'SUCCEEDED', thumbnailProblem: 'its thumbnail t.png is 32×32, not 64×64' }],
      successLog: ['J1'],
    });
    expect(result.problems).toEqual(['J1 SUCCEEDED but its thumbnail t.png is 32×32, not 64×64']);
  });

  it('fails when the success log and the queue disagree', () => {
    const result = account({ submitted: 2, jobs: [ok('J1'), dead('J2')], successLog: ['J2', 'J9'] });
    expect(result.problems).toEqual([
      'J2 is in the success log but ended DEAD',
      'J9 is in the success log but was never submitted',
      'J1 SUCCEEDED but its handler never logged a success',
    ]);
  });
});

describe('demo fault plan', () => {
  const rates = { transient: 0.1, crash: 0.05, hang: 0.05, stall: 0.05, poison: 0.05 };

  it('gives round(rate × jobs) jobs each fault', () => {
    const plan = planFaults(40, rates, 1);
    const count = (fault: string): number => plan.filter((p) => p.fault === fault).length;
    expect([count('transient'), count('crash'), count('hang'), count('stall'), count('poison'), count('none')]).toEqual([4, 2, 2, 2, 2, 28]);
    expect(faultCounts(40, rates)).toEqual({ transient: 4, crash: 2, hang: 2, stall: 2, poison: 2 });
  });

  it('is the same for the same seed and differs for another', () => {
    expect(planFaults(100, rates, 7)).toEqual(planFaults(100, rates, 7));
    expect(planFaults(100, rates, 7)).not.toEqual(planFaults(100, rates, 8));
  });

  it('never plans more faults than jobs', () => {
    const plan = planFaults(3, { transient: 1, crash: 1, hang: 0, stall: 0, poison: 1 }, 1);
    expect(plan.map((p) => p.fault)).toEqual(['transient', 'transient', 'transient']);
  });
});

describe('thumbnail size', () => {
  it('fits the thumbnail in the square, keeping the aspect ratio and never enlarging', () => {
    expect(fitWithin(512, 512, 64)).toEqual({ width: 64, height: 64 });
    expect(fitWithin(640, 320, 64)).toEqual({ width: 64, height: 32 });
    expect(fitWithin(30, 20, 64)).toEqual({ width: 30, height: 20 });
  });
});
