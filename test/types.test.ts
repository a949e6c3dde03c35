/**
 * TypeScript end to end, against the built package as an app sees it (the
 * fixtures import `leasehold` by name): `tsc` accepts payloads of the types
 * their handlers take and refuses others, and an app run under tsx loads a
 * handler module written in TypeScript into its pool threads.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

function typecheck(project: string): { status: number | null; errors: string[] } {
  const run = spawnSync(process.execPath, [TSC, '-p', `test/fixtures/types/${project}`, '--pretty', 'false'], { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, errors: run.stdout.split('\n').filter((line) => line.includes('error TS')) };
}

describe('typed jobs (JsonJobs over a jsonHandlers module)', () => {
  it('compiles submits whose payloads have their handlers\' types, on JobQueue and RedisJobQueue', () => {
    expect(typecheck('pass')).toEqual({ status: 0, errors: [] });
  });

  it('refuses a payload of the wrong type and a job type no handler takes, and nothing else', () => {
    const { status, errors } = typecheck('fail');
    expect(status).toBe(2);
    expect(errors).toEqual([
      "test/fixtures/types/fail/app.ts(6,24): error TS2322: Type 'number' is not assignable to type 'string'.",
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
});
