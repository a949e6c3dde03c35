/**
 * The optional peer dependencies and what a user is told to install:
 * package.json's peerDependencies are the one table of their ranges; the
 * README's install commands name the same ranges, and so does
 * MissingDependencyError. jimp, used only by the demo, is one of them: an app
 * that installed leasehold does not get it, and the demo says how to.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const HIDE = join(ROOT, 'test', 'fixtures', 'without-packages.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-peers-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The install commands of the README's table of optional dependencies. */
function readmeInstalls(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  return [...readme.matchAll(/`npm install ([^`]+)`/g)].flatMap((match) => match[1]!.split(' '));
}

describe('the ranges of the optional peer dependencies', () => {
  it('are all optional, and jimp (the demo\'s) is one of them, not a dependency', () => {
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual(Object.keys(pkg.peerDependenciesMeta).sort());
    expect(Object.values(pkg.peerDependenciesMeta).every((meta) => meta.optional === true)).toBe(true);
    expect(pkg.dependencies.jimp).toBeUndefined();
    expect(pkg.peerDependencies.jimp).toBeDefined();
    expect(pkg.devDependencies.jimp).toBeDefined();
  });

  it('are named in the README\'s install commands exactly as package.json has them', () => {
    const installs = readmeInstalls();
    for (const [name, range] of Object.entries(pkg.peerDependencies)) {
      expect(installs, name).toContain(`${name}@${range}`);
    }
  });

  it('are named by MissingDependencyError, as the README names them', () => {
    const code = `
      import { collectMetrics, JobQueue, RetryPolicy, systemClock } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)};
      const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
      const registry = { registerMetric() {}, getSingleMetric() {}, removeSingleMetric() {}, metrics() {} };
      try { collectMetrics({ queue }, registry); } catch (error) { console.log(JSON.stringify({ code: error.code, range: error.range, message: error.message })); }
    `;
    const run = spawnSync(process.execPath, ['--require', join(ROOT, 'test/fixtures/metrics-without-prom-client.cjs'), '--input-type=module', '--eval', code], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    const error = JSON.parse(run.stdout) as { code: string; range: string; message: string };
    expect(error.code).toBe('ERR_MISSING_DEPENDENCY');
    expect(error.range).toBe(pkg.peerDependencies['prom-client']);
    const spec = /`npm install (\S+)`/.exec(error.message)?.[1];
    expect(readmeInstalls()).toContain(spec);
  });
});

describe('leasehold demo without jimp installed', () => {
  it('exits 1 naming jimp and its range, before writing anything', () => {
    const out = join(scratch, 'demo-out');
    const run = spawnSync(process.execPath, ['--import', HIDE, join(ROOT, 'dist', 'cli', 'main.js'), 'demo', '--jobs', '2', '--out', out], {
      encoding: 'utf8', timeout: 60_000, env: { ...process.env, LEASEHOLD_HIDE: 'jimp' },
    });
    expect(run.stderr).toBe(`leasehold: The demo (leasehold demo) needs the package jimp: install it with \`npm install jimp@${pkg.peerDependencies.jimp}\`\n`);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  });
});
