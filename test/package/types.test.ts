/**
 * TypeScript end to end, against the built package as an app sees it (the
 * fixtures import `leasehold` by name): `tsc` accepts payloads of the types
 * their handlers take and refuses others, and an app run under tsx loads a
 * handler module written in TypeScript into its pool threads.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

function typecheck(project: string): { status: number | null; errors: string[] } {
  const run = spawnSync(process.execPath, [TSC, '-p', `test/fixtures/types/${project}`, '--pretty', 'false'], { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, errors: run.stdout.split('\n').filter((line) => line.includes('error TS')) };
}

describe('typed jobs (JsonJobs over a jsonHandlers module)', () => {
  it('compiles submits whose payloads have their handlers\' types, positional or with submit\'s options, on JobQueue and RedisJobQueue', () => {
    expect(typecheck('pass')).toEqual({ status: 0, errors: [] });
  });

  it('refuses a payload of the wrong type (positional or options form), an unknown submit option and a job type no handler takes, and nothing else', () => {
    const { status, errors } = typecheck('fail');
    expect(status).toBe(2);
    expect(errors).toEqual([
      "test/fixtures/types/fail/app.ts(6,24): error TS2322: Type 'number' is not assignable to type 'string'.",
      "test/fixtures/types/fail/bad-option.ts(6,51): error TS2353: Object literal may only specify known properties, and 'prio' does not exist in type 'SubmitOptions'.",
      "test/fixtures/types/fail/bad-option.ts(7,24): error TS2322: Type 'number' is not assignable to type 'string'.",
      'test/fixtures/types/fail/unknown-type.ts(6,13): error TS2345: Argument of type \'"sms"\' is not assignable to parameter of type \'"resize" | "email"\'.',
    ]);
  });
});

describe('TypeScript handler modules', () => {
  it('load in the pool threads of an app run under tsx, which decode JSON payloads and dead-letter one that is not JSON', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/types/run/app.ts'], {
      cwd: ROOT, encoding: 'utf8', timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      { id: 'J1', type: 'email', status: 'SUCCEEDED', lastError: null },
      { id: 'J2', type: 'email', status: 'DEAD', lastError: 'no address: nobody' },
      { id: 'J3', type: 'resize', status: 'SUCCEEDED', lastError: null },
      { id: 'J4', type: 'resize', status: 'DEAD', lastError: expect.stringMatching(/^Job J4 \(resize\): its payload is not JSON \(/) },
    ]);
  });

  it('refuse to start a pool, saying to install tsx, when no tsx can be found beside the module', async () => {
    // A folder outside the repository: no node_modules above it holds tsx.
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-no-tsx-'));
    try {
      writeFileSync(join(dir, 'handlers.ts'), 'export function email(payload: string): void {}\n');
      const module = pathToFileURL(join(dir, 'handlers.ts'));
      const pool = new WorkerPool(new JobQueue(systemClock, new RetryPolicy(1, 0, 0)), { handlers: module, threads: 1 });
      await expect(pool.start()).rejects.toThrow(
        `The handler module ${module.href} did not load: ${module.href} is TypeScript: install tsx beside it (\`npm install --save-dev tsx\`) and run the app under it (\`node --import tsx app.ts\`)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
