/**
 * The journal tools of the `leasehold` command, run as a user runs them (the
 * built CLI in a child process): counts and dead letters readable while
 * another process owns the journal, dead letters retried only by an owner.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../dist/index.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-cli-journal-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function leasehold(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

let files = 0;
/** A closed journal with 2 SUCCEEDED, 2 DEAD (J3 'bad input', J4 'timeout') and 1 PENDING job. */
function journal(): string {
  const path = join(scratch, `q${++files}.db`);
  const queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
  const errors: Record<string, string> = { J3: 'bad input', J4: 'timeout' };
  for (let i = 0; i < 5; i++) queue.submit(`type${i}`, `payload ${i}`);
  for (let i = 0; i < 4; i++) {
    const lease = queue.poll('w', 100)!;
    const error = errors[lease.jobId];
    if (error === undefined) queue.complete(lease.jobId, lease.token);
    else queue.fail(lease.jobId, lease.token, error);
  }
  queue.close();
  return path;
}

describe('leasehold stats / dlq', () => {
  it('counts the jobs of a journal by status', () => {
    const run = leasehold('stats', journal());
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/PENDING\s+1\b/);
    expect(run.stdout).toMatch(/SUCCEEDED\s+2\b/);
    expect(run.stdout).toMatch(/DEAD\s+2\b/);
  });

  it('lists the dead letters with their attempts and last errors', () => {
    const run = leasehold('dlq', 'list', journal());
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Dead letters');
    expect(run.stdout).toMatch(/J3.*type2.*bad input/);
    expect(run.stdout).toMatch(/J4.*type3.*timeout/);
  });

  it('retries the named dead letters, and then all with --all', () => {
    const path = journal();
    expect(leasehold('dlq', 'retry', path, 'J4').status).toBe(0);
    let queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
    expect(queue.view('J4')).toMatchObject({ status: 'PENDING', attempts: 0, lastError: 'timeout' });
    expect(queue.view('J3').status).toBe('DEAD');
    queue.close();
    expect(leasehold('dlq', 'retry', path, '--all').status).toBe(0);
    queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
    expect(queue.dlqDepth()).toBe(0);
    queue.close();
  });

  it('refuses to retry a job that is not dead, or without ids, and a missing journal', () => {
    const path = journal();
    const notDead = leasehold('dlq', 'retry', path, 'J1');
    expect(notDead.status).toBe(1);
    expect(notDead.stderr).toContain('DEAD');
    expect(leasehold('dlq', 'retry', path).status).toBe(2);
    const missing = leasehold('stats', join(scratch, 'none.db'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('No journal');
  });

  it('reads a journal another process owns, but refuses to change it', async () => {
    const path = journal();
    const owner = spawn(process.execPath, ['-e', `
      import('${new URL('../dist/index.js', import.meta.url).href}').then(({ JobQueue, ManualClock, RetryPolicy }) => {
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
