/**
 * The package as a new user gets it. A copy of this working tree without
 * dist/ (a fresh clone) is packed with `npm pack`, whose prepare script builds
 * dist/; the tarball is installed into a new app with `npm install` (the
 * registry serves its dependencies); then the README's quick start, the bin
 * and the errors run there — first as installed, without the optional peer
 * dependencies, then with better-sqlite3 and ioredis linked in from this
 * repository (their native build takes a minute; the repository's is the
 * same version).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProgram, sectionSnippets, snippetsOf, writeFiles } from '../support/snippets.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-pack-'));
const clone = join(scratch, 'clone');
const app = join(scratch, 'app');
const installed = join(app, 'node_modules', 'leasehold');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let packed: string[];

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The working tree's files that git would commit (tracked or new, not ignored): a clone, with today's edits. */
function copyWorkingTree(to: string): void {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' });
  for (const file of files.split('\0').filter((name) => name !== '' && existsSync(join(ROOT, name)))) {
    mkdirSync(dirname(join(to, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(to, file));
  }
}

/** Runs `code` as an ES module in the app; `args` go before it (e.g. --enable-source-maps). */
function runInApp(code: string, args: string[] = []): { status: number | null; stdout: string; stderr: string } {
  writeFileSync(join(app, 'check.mjs'), code);
  const run = spawnSync(process.execPath, [...args, 'check.mjs'], { cwd: app, encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

beforeAll(() => {
  copyWorkingTree(clone);
  // The dev dependencies prepare needs (tsc), as `npm install` in a clone would have put them.
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
  const pack = execFileSync(NPM, ['pack', '--json', '--pack-destination', scratch], { cwd: clone, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [result] = JSON.parse(pack) as { filename: string; files: { path: string }[] }[];
  packed = result!.files.map((file) => file.path);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  execFileSync(NPM, ['install', '--no-audit', '--no-fund', join(scratch, result!.filename)], { cwd: app, stdio: 'pipe' });
}, 300_000);

describe('npm pack of a fresh clone', () => {
  it('builds dist/ (the prepare script) and ships it with src/, workers/ and docs/, not the tests', () => {
    expect(existsSync(join(clone, 'dist', 'index.js'))).toBe(true);
    for (const file of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js', 'src/index.ts', 'workers/thumbnail-handlers.js', 'docs/pool.md']) {
      expect(packed).toContain(file);
    }
    expect(packed.filter((file) => /^(test|bench)\//.test(file))).toEqual([]);
  });

  it('ships every file its source maps and declaration maps point at', () => {
    const maps = packed.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(50);
    const missing: string[] = [];
    for (const map of maps) {
      const { sources } = JSON.parse(readFileSync(join(installed, map), 'utf8')) as { sources: string[] };
      for (const source of sources) {
        if (!existsSync(resolve(dirname(join(installed, map)), source))) missing.push(`${map} → ${source}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('an app that installed the tarball', () => {
  it('has no better-sqlite3, ioredis or prom-client: they are optional peer dependencies', () => {
    expect(existsSync(join(app, 'node_modules', 'better-sqlite3'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'ioredis'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'prom-client'))).toBe(false);
  });

  it('runs the README quick start', () => {
    const snippets = sectionSnippets(join(ROOT, 'README.md'), 'README.md', 'Quick start');
    writeFiles(app, snippets);
    const programs = snippets.filter((snippet) => !snippet.isFile);
    expect(programs).toHaveLength(1);
    const run = runProgram(app, programs[0]!);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('running invoice 42 attempt 1');
    expect(run.stdout).toContain('worker ran email {"to":"ada@example.com"}');
    expect(run.stdout).toMatch(/succeeded: 2/);
  });

  it('runs the bin: leasehold --version', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const run = spawnSync(join(app, 'node_modules', '.bin', 'leasehold'), ['--version'], { cwd: app, encoding: 'utf8' });
    expect(run.stdout).toBe(`${version}\n`);
    expect(run.status).toBe(0);
  });

  it('throws MissingDependencyError naming better-sqlite3 from JobQueue.open, and ioredis from RedisJobQueue.connect', () => {
    const run = runInApp(`
      import { JobQueue, RedisJobQueue, RetryPolicy, systemClock } from 'leasehold';
      const policy = new RetryPolicy(3, 0, 0);
      const report = (error) => ({ name: error.name, code: error.code, packageName: error.packageName, message: error.message });
      const out = {};
      try { JobQueue.open('jobs.db', systemClock, policy); } catch (error) { out.sqlite = report(error); }
      await RedisJobQueue.connect({ redis: 'redis://127.0.0.1:1', name: 'q', policy }).catch((error) => { out.redis = report(error); });
      console.log(JSON.stringify(out));
    `);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({
      sqlite: {
        name: 'MissingDependencyError', code: 'ERR_MISSING_DEPENDENCY', packageName: 'better-sqlite3',
        message: 'The SQLite journal (JobQueue.open, leasehold stats and dlq) needs the package better-sqlite3: install it with `npm install better-sqlite3@12`',
      },
      redis: {
        name: 'MissingDependencyError', code: 'ERR_MISSING_DEPENDENCY', packageName: 'ioredis',
        message: 'RedisJobQueue needs the package ioredis: install it with `npm install ioredis@6`',
      },
    });
    expect(existsSync(join(app, 'jobs.db'))).toBe(false);
  });

  it('says which package to install when the bin needs better-sqlite3 for a journal', () => {
    writeFileSync(join(app, 'empty.db'), '');
    const run = spawnSync(join(app, 'node_modules', '.bin', 'leasehold'), ['stats', 'empty.db'], { cwd: app, encoding: 'utf8' });
    expect(run.stderr).toBe(
      'leasehold: The SQLite journal (JobQueue.open, leasehold stats and dlq) needs the package better-sqlite3: install it with `npm install better-sqlite3@12`\n',
    );
    expect(run.status).toBe(1);
    rmSync(join(app, 'empty.db'));
  });

  it('gives stack traces that point at shipped files, with source maps on (src/) and off (dist/)', () => {
    const code = `
      import { JobQueue, RetryPolicy, WorkerPool, systemClock } from 'leasehold';
      try {
        new WorkerPool(new JobQueue(systemClock, new RetryPolicy(1, 0, 0)), { handlers: './h.js', threads: 0 });
      } catch (error) {
        console.log(error.stack);
      }
    `;
    for (const [args, folder] of [[['--enable-source-maps'], 'src'], [[], 'dist']] as const) {
      const { stdout } = runInApp(code, [...args]);
      const frames = [...stdout.matchAll(/\((?:file:\/\/)?(\/[^():]+):\d+:\d+\)/g)].map((match) => match[1]!);
      const ours = frames.filter((file) => file.startsWith(realpathSync(installed)) || file.startsWith(installed));
      expect(ours.length, stdout).toBeGreaterThan(0);
      for (const file of ours) {
        expect(file).toContain(`/leasehold/${folder}/`);
        expect(existsSync(file), file).toBe(true);
      }
    }
  });

  describe('with the optional dependencies installed', () => {
    beforeAll(() => {
      for (const name of ['better-sqlite3', 'ioredis']) {
        symlinkSync(realpathSync(join(ROOT, 'node_modules', name)), join(app, 'node_modules', name));
      }
    });

    it('runs the durability guide\'s journal snippet, and the bin reads the journal it left', () => {
      const snippets = snippetsOf(join(ROOT, 'docs', 'durability.md'), 'docs/durability.md');
      const program = snippets.find((snippet) => !snippet.isFile && snippet.code.includes("JobQueue.open('jobs.db'"));
      expect(program).toBeDefined();
      const run = runProgram(app, program!);
      expect(run.stderr).toBe('');
      expect(run.stdout).toBe('PENDING\n');
      const stats = spawnSync(join(app, 'node_modules', '.bin', 'leasehold'), ['stats', 'jobs.db', '--json'], { cwd: app, encoding: 'utf8' });
      expect(stats.stderr).toBe('');
      expect(JSON.parse(stats.stdout)).toMatchObject({ pending: 1, ready: 1, delayed: 0 });
    });

    it('finds ioredis: connect to a closed port fails as BackendUnavailableError, not a missing dependency', () => {
      const run = runInApp(`
        import { RedisJobQueue, RetryPolicy } from 'leasehold';
        await RedisJobQueue.connect({ redis: 'redis://127.0.0.1:1', name: 'q', policy: new RetryPolicy(3, 0, 0) })
          .catch((error) => console.log(error.code));
      `);
      expect(run.stdout).toBe('ERR_BACKEND_UNAVAILABLE\n');
    });
  });
});
