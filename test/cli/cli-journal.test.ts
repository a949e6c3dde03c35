/**
 * The journal tools of the `leasehold` command, run as a user runs them (the
 * built CLI in a child process): counts and dead letters readable while
 * another process owns the journal, dead letters retried only by an owner.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-cli-journal-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function leasehold(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

let files = 0;
/** A closed journal: 2 SUCCEEDED, 2 DEAD (J3 'bad input', J4 'timeout'), J5 PENDING and ready, J6 PENDING and delayed. */
function journal(): string {
  const path = join(scratch, `q${++files}.db`);
  const queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
  const errors: Record<string, string> = { J3: 'bad input', J4: 'timeout' };
  for (let i = 0; i < 5; i++) queue.submit(`type${i}`, `payload ${i}`);
  queue.submit('later', 'in a year', 0, Date.now() + 365 * 86_400_000);
  for (let i = 0; i < 4; i++) {
    const lease = queue.poll('w', 100)!;
    const error = errors[lease.jobId];
    if (error === undefined) queue.complete(lease.jobId, lease.token);
    else queue.fail(lease.jobId, lease.token, error);
  }
  queue.close();
  return path;
}

function statusOf(path: string, id: string): string {
  const queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
  try {
    return queue.view(id).status;
  } finally {
    queue.close();
  }
}

describe('leasehold stats / dlq', () => {
  it('counts the jobs of a journal by status in an aligned table, PENDING split into ready and delayed', () => {
    const path = journal();
    const run = leasehold('stats', path);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(
      [
        `Journal ${path}`,
        '  PENDING    2',
        '    ready    1',
        '    delayed  1',
        '  RUNNING    0',
        '  SUCCEEDED  2',
        '  DEAD       2',
        '  CANCELLED  0',
        '',
      ].join('\n'),
    );
  });

  it('prints the counts as JSON with --json', () => {
    const path = journal();
    const run = leasehold('stats', path, '--json');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ file: path, pending: 2, ready: 1, delayed: 1, running: 0, succeeded: 2, dead: 2, cancelled: 0, paused: false });
  });

  it('lists the dead letters in aligned columns, with no index column and no quotes', () => {
    const path = journal();
    const run = leasehold('dlq', 'list', path);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(
      [
        `Dead letters in ${path}: 2`,
        '  id  type   attempts  last error',
        '  J3  type2         1  bad input',
        '  J4  type3         1  timeout',
        '',
      ].join('\n'),
    );
  });

  it('lists the dead letters as JSON with --json, an empty array when there are none', () => {
    const path = journal();
    const run = leasehold('dlq', 'list', path, '--json');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      { id: 'J3', type: 'type2', priority: 0, attempts: 1, lastError: 'bad input', payload: 'payload 2' },
      { id: 'J4', type: 'type3', priority: 0, attempts: 1, lastError: 'timeout', payload: 'payload 3' },
    ]);
    expect(leasehold('dlq', 'retry', path, '--all').status).toBe(0);
    expect(JSON.parse(leasehold('dlq', 'list', path, '--json').stdout)).toEqual([]);
  });

  it('retries the named dead letters, and then all with --all', () => {
    const path = journal();
    expect(leasehold('dlq', 'retry', path, 'J4').stdout).toBe('Retried 1 dead job(s): J4\n');
    let queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
    expect(queue.view('J4')).toMatchObject({ status: 'PENDING', attempts: 0, lastError: 'timeout' });
    expect(queue.view('J3').status).toBe('DEAD');
    queue.close();
    expect(leasehold('dlq', 'retry', path, '--all').status).toBe(0);
    queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
    expect(queue.dlqDepth()).toBe(0);
    queue.close();
  });

  it('refuses to retry a job that is not dead, retrying none of the others named with it', () => {
    const path = journal();
    const notDead = leasehold('dlq', 'retry', path, 'J3', 'J1');
    expect(notDead.status).toBe(1);
    expect(notDead.stderr).toBe('leasehold: Job J1 is SUCCEEDED, not DEAD: nothing was retried\n');
    expect(statusOf(path, 'J3')).toBe('DEAD');
  });

  it('names an unknown job id plainly, and refuses a malformed one or none as bad usage', () => {
    const path = journal();
    const unknown = leasehold('dlq', 'retry', path, 'J999');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toBe('leasehold: No job with id J999\n');
    const malformed = leasehold('dlq', 'retry', path, 'x17');
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toBe('leasehold dlq retry: x17 is not a job id (ids look like J17)\n');
    expect(leasehold('dlq', 'retry', path).status).toBe(2);
  });

  it('says there is no journal at a missing path, with exit code 1', () => {
    const missing = join(scratch, 'none.db');
    const run = leasehold('stats', missing);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(`leasehold: No journal at ${missing}\n`);
  });

  it('says an empty file holds no journal yet, with exit code 1, and leaves it empty', () => {
    const empty = join(scratch, 'empty.db');
    writeFileSync(empty, '');
    const run = leasehold('stats', empty);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(`leasehold: ${empty} holds no journal yet (an empty database; opening it for writing creates one)\n`);
    expect(statSync(empty).size).toBe(0);
  });

  it('reads a journal another process owns, but refuses to change it', async () => {
    const path = journal();
    const owner = spawn(process.execPath, ['-e', `
      import('${new URL('../../dist/index.js', import.meta.url).href}').then(({ JobQueue, ManualClock, RetryPolicy }) => {
        JobQueue.open(${JSON.stringify(path)}, new ManualClock(0), new RetryPolicy(1, 0, 0));
        console.log('owned');
        setInterval(() => {}, 1000);
      });`]);
    try {
      await new Promise<void>((resolve, reject) => {
        owner.stdout.on('data', (data: Buffer) => data.toString().includes('owned') && resolve());
        owner.on('exit', (code) => reject(new Error(`the owner exited with ${code}`)));
      });
      expect(leasehold('stats', path).status).toBe(0);
      expect(leasehold('dlq', 'list', path).stdout).toContain('J3');
      const retry = leasehold('dlq', 'retry', path, '--all');
      expect(retry.status).toBe(1);
      expect(retry.stderr).toContain(`owned by process ${owner.pid}`);
    } finally {
      owner.kill('SIGKILL');
    }
  });
});
