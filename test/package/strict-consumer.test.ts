/**
 * The declarations as a strict app compiles them: `skipLibCheck: false`, so
 * tsc reads and checks every .d.ts leasehold ships, with only leasehold's
 * runtime dependencies installed beside it (none of the optional peers). The
 * app is made in a temp folder: `node_modules/leasehold` holds the built
 * dist/ and package.json, as an install has them; the runtime dependencies are
 * linked from this repository.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const app = mkdtempSync(join(tmpdir(), 'leasehold-strict-'));

/** Links `name` from this repository's node_modules into the app's. */
function linkPackage(name: string): void {
  const to = join(app, 'node_modules', name);
  mkdirSync(dirname(to), { recursive: true });
  symlinkSync(realpathSync(join(ROOT, 'node_modules', name)), to);
}

function typecheck(code: string): { status: number | null; errors: string[] } {
  writeFileSync(join(app, 'app.ts'), code);
  const run = spawnSync(process.execPath, [TSC, '-p', app, '--pretty', 'false'], { cwd: app, encoding: 'utf8' });
  return { status: run.status, errors: run.stdout.split('\n').filter((line) => line.includes('error TS')) };
}

beforeAll(() => {
  const installed = join(app, 'node_modules', 'leasehold');
  mkdirSync(installed, { recursive: true });
  cpSync(join(ROOT, 'dist'), join(installed, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(installed, 'package.json'));
  const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const name of [...Object.keys(dependencies), '@types/node', '@types/cli-progress']) linkPackage(name);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'strict-app', private: true, type: 'module' }));
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', types: ['node'], noEmit: true,
      strict: true, skipLibCheck: false, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true,
    },
    files: ['app.ts'],
  }));
});

afterAll(() => rmSync(app, { recursive: true, force: true }));

const APP = `
  import { JobQueue, RetryPolicy, WorkerPool, systemClock, JobQueueError, type JobView } from 'leasehold';
  const queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000));
  const pool = new WorkerPool(queue, { handlers: new URL('./handlers.js', import.meta.url), threads: 2 });
  const id: string = queue.submit('resize', JSON.stringify({ path: 'a.png' }));
  const view: JobView = queue.view(id);
  await pool.drain().catch((error: unknown) => { if (error instanceof JobQueueError) console.log(error.code); });
  console.log(view.status);
  await pool.close();
`;

describe('the declarations in a strict app with skipLibCheck off', () => {
  it('compile with none of the optional peers installed (no better-sqlite3, ioredis, prom-client, bull-board, OpenTelemetry)', () => {
    expect(typecheck(APP)).toEqual({ status: 0, errors: [] });
  });

  it('still check the app\'s own code: a wrong argument is an error', () => {
    const { status, errors } = typecheck(`${APP}\nqueue.submit('resize', 42);\n`);
    expect(status).toBe(2);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('error TS2769: No overload matches this call');
  });

  it('give the real types of an optional peer where it is installed: collectMetrics wants a prom-client Registry', () => {
    linkPackage('prom-client');
    const code = `${APP}\nimport { collectMetrics } from 'leasehold';\nimport { Registry } from 'prom-client';\ncollectMetrics({ queue, pool }, new Registry());\ncollectMetrics({ queue, pool }, 'not a registry');\n`;
    const { status, errors } = typecheck(code);
    expect(status).toBe(2);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/app\.ts\(\d+,\d+\): error TS2345: Argument of type 'string' is not assignable to parameter of type 'Registry/);
  });
});
