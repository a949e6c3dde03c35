/**
 * `leasehold dashboard` run as a user runs it (the built CLI in a child
 * process): it prints a URL with its token, serves bull-board's API from the
 * queue behind it, refuses writes unless --allow-writes, and stops cleanly
 * on SIGINT or SIGTERM.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { JobQueue, JobStatus, RetryPolicy, systemClock, type QueueStats } from '../../dist/index.js';
import { Redis } from 'ioredis';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-cli-dashboard-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const POLICY = new RetryPolicy(5, 1_000, 60_000);

interface Running {
  child: ChildProcess;
  root: string;
  token: string;
  /** Resolves when the process exits: its exit code and everything it printed. */
  exited: Promise<{ code: number | null; stdout: string }>;
}

/** Starts `leasehold dashboard ...args` and waits for the URL it prints. */
async function startDashboard(...args: string[]): Promise<Running> {
  const child = spawn(process.execPath, [CLI, 'dashboard', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; stdout: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout })));
  const url = await new Promise<URL>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk;
      const found = /http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+/.exec(stdout);
      if (found !== null) resolve(new URL(found[0]));
    });
    void exited.then(({ code }) => reject(new Error(`leasehold dashboard exited (${code}) before printing its URL: ${stderr}`)));
  });
  return { child, root: `${url.origin}/`, token: url.searchParams.get('token')!, exited };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function boardCounts(running: Running): Promise<Record<string, number>> {
  const response = await fetch(`${running.root}api/queues`, { headers: bearer(running.token) });
  expect(response.status).toBe(200);
  const { queues } = await response.json() as { queues: { counts: Record<string, number> }[] };
  return queues[0]!.counts;
}

function expectCountsOf(counts: Record<string, number>, stats: QueueStats): void {
  expect(counts).toMatchObject({ waiting: stats.ready, delayed: stats.delayed, active: stats.running, completed: stats.succeeded, failed: stats.dead });
}

let files = 0;
/** A journal with J1 SUCCEEDED (a result), J2 DEAD, J3 PENDING ready, J4 PENDING delayed; its queue open (the owner) until the test ends. */
function ownedJournal(): { path: string; queue: JobQueue } {
  const path = join(scratch, `q${++files}.db`);
  const queue = JobQueue.open(path, systemClock, POLICY);
  onTestFinished(() => queue.close());
  queue.submit('resize', 'a.png');
  queue.submit('parse', '{oops', { maxAttempts: 1 });
  let lease = queue.poll('w', 60_000)!;
  queue.complete(lease.jobId, lease.token, { thumbnail: 'a-64.png' });
  lease = queue.poll('w', 60_000)!;
  queue.fail(lease.jobId, lease.token, 'cannot parse');
  queue.submit('resize', 'b.png');
  queue.submit('email', 'later', { delayMillis: 3_600_000 });
  return { path, queue };
}

describe('leasehold dashboard --journal', () => {
  it('serves a journal another process owns, read-only: the counts of its stats(), each tab\'s jobs, writes refused with 403, the journal unchanged; SIGTERM stops it', async () => {
    const { path, queue } = ownedJournal();
    const running = await startDashboard('--journal', path);
    expectCountsOf(await boardCounts(running), queue.stats());
    for (const [tab, ids] of [['failed', ['J2']], ['waiting', ['J3']], ['delayed', ['J4']], ['completed', ['J1']]] as const) {
      const query = new URLSearchParams({ activeQueue: basename(path), status: tab, page: '1', jobsPerPage: '10' });
      const listing = await fetch(`${running.root}api/queues?${query}`, { headers: bearer(running.token) });
      const { queues } = await listing.json() as { queues: { jobs: { id: string; returnValue: unknown }[] }[] };
      expect(queues[0]!.jobs.map((job) => job.id), tab).toEqual(ids);
      if (tab === 'completed') expect(queues[0]!.jobs[0]!.returnValue).toEqual({ thumbnail: 'a-64.png' });
    }
    expect((await fetch(`${running.root}api/queues`)).status).toBe(401);
    const retry = await fetch(`${running.root}api/queues/${basename(path)}/J2/retry`, { method: 'PUT', headers: bearer(running.token) });
    expect(retry.status).toBe(403);
    expect(queue.view('J2').status).toBe(JobStatus.DEAD);
    running.child.kill('SIGTERM');
    const { code, stdout } = await running.exited;
    expect(code).toBe(0);
    expect(stdout).toMatch(/read-only/);
    expect(stdout).toMatch(/stopped \(SIGTERM\)/);
  });

  it('with --allow-writes owns the journal: a retry through the API puts the dead job back to PENDING; SIGINT stops it and lets the journal go', async () => {
    const { path, queue } = ownedJournal();
    queue.close();
    const running = await startDashboard('--journal', path, '--allow-writes', '--max-attempts', '5');
    const retry = await fetch(`${running.root}api/queues/${basename(path)}/J2/retry`, { method: 'PUT', headers: bearer(running.token) });
    expect(retry.status).toBe(204);
    running.child.kill('SIGINT');
    expect((await running.exited).code).toBe(0);
    const reopened = JobQueue.open(path, systemClock, POLICY);
    try {
      expect(reopened.view('J2')).toMatchObject({ status: JobStatus.PENDING, attempts: 0 });
    } finally {
      reopened.close();
    }
  });

  it('with --allow-writes refuses a journal another process owns (exit 1), as dlq retry does', () => {
    const { path } = ownedJournal();
    const run = spawnSync(process.execPath, [CLI, 'dashboard', '--journal', path, '--allow-writes', '--max-attempts', '5'], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^leasehold: .*(owned|busy)/im);
  });

  it('refuses, read-only too, a file that is no journal, is empty or is missing (exit 1) before it serves anything', () => {
    const garbage = join(scratch, 'garbage.db');
    writeFileSync(garbage, 'not a database '.repeat(100));
    const empty = join(scratch, 'empty.db');
    writeFileSync(empty, '');
    const cases = [[garbage, /not a leasehold journal/], [empty, /empty.db holds no journal yet/], [join(scratch, 'missing.db'), /No journal at/]] as const;
    for (const [path, message] of cases) {
      const run = spawnSync(process.execPath, [CLI, 'dashboard', '--journal', path], { encoding: 'utf8', timeout: 30_000 });
      expect(run.status, path).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).not.toMatch(/http:/);
    }
  });

  it('exits 2 on bad usage: no queue, both queues, --redis without --name, a bad port', () => {
    const cases = [
      [], ['--journal', 'x.db', '--redis', 'redis://127.0.0.1'], ['--redis', 'redis://127.0.0.1', '--max-attempts', '3'], ['--port', '70000', '--journal', 'x.db'],
    ];
    for (const args of cases) {
      const run = spawnSync(process.execPath, [CLI, 'dashboard', ...args], { encoding: 'utf8', timeout: 30_000 });
      expect(run.status, args.join(' ')).toBe(2);
    }
    const run = spawnSync(process.execPath, [CLI, 'dashboard', '--redis', 'redis://127.0.0.1', '--max-attempts', '3'], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toMatch(/--redis needs --name/);
  });

  it("shows as a job's attempts its own or the app's policy given with --max-attempts, and none when neither is known", async () => {
    const path = join(scratch, `policy-${++files}.db`);
    const queue = JobQueue.open(path, systemClock, new RetryPolicy(3, 1_000, 60_000));
    onTestFinished(() => queue.close());
    queue.submit('resize', 'a.png');
    queue.submit('parse', '{oops', { maxAttempts: 7 });
    const attemptsShown = async (running: Running, id: string): Promise<unknown> => {
      const response = await fetch(`${running.root}api/queues/${basename(path)}/${id}`, { headers: bearer(running.token) });
      expect(response.status).toBe(200);
      return ((await response.json()) as { job: { opts: { attempts?: number } } }).job.opts.attempts;
    };
    const unknown = await startDashboard('--journal', path);
    expect(await attemptsShown(unknown, 'J1')).toBeUndefined();
    expect(await attemptsShown(unknown, 'J2')).toBe(7);
    unknown.child.kill('SIGTERM');
    await unknown.exited;
    const given = await startDashboard('--journal', path, '--max-attempts', '3');
    expect(await attemptsShown(given, 'J1')).toBe(3);
    expect(await attemptsShown(given, 'J2')).toBe(7);
    given.child.kill('SIGTERM');
    await given.exited;
  });
});

describeRedis('leasehold dashboard --redis', () => {
  it('serves a Redis queue by its name: the counts of its stats()', async () => {
    const redis = await fileRedis();
    const { RedisJobQueue } = await import('../../dist/index.js');
    const queue = await RedisJobQueue.connect({ redis: redis.url, name: 'cli-dashboard', policy: POLICY });
    onTestFinished(() => queue.close());
    await queue.submit('resize', 'a.png');
    await queue.submit('email', 'later', { delayMillis: 3_600_000 });
    const running = await startDashboard('--redis', redis.url, '--name', 'cli-dashboard', '--max-attempts', '5');
    expectCountsOf(await boardCounts(running), await queue.stats());
    running.child.kill('SIGTERM');
    expect((await running.exited).code).toBe(0);
  });

  it('refuses a --name under which Redis holds no queue (exit 1, QueueNotFoundError), serving nothing and writing no key', async () => {
    const redis = await fileRedis();
    const { RedisJobQueue } = await import('../../dist/index.js');
    const queue = await RedisJobQueue.connect({ redis: redis.url, name: 'cli-known', policy: POLICY });
    onTestFinished(() => queue.close());
    await queue.submit('resize', 'a.png');
    const run = spawnSync(process.execPath, [CLI, 'dashboard', '--redis', redis.url, '--name', 'cli-knwon', '--max-attempts', '5'], {
      encoding: 'utf8', timeout: 30_000, env: { ...process.env, LEASEHOLD_DEBUG: '1' },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^leasehold: QueueNotFoundError: No queue named "cli-knwon" in Redis at redis:\/\/.+: no job was ever submitted to it/);
    expect(run.stdout).not.toMatch(/http:/);
    const client = new Redis(redis.url);
    onTestFinished(() => client.disconnect());
    expect(await client.keys('leasehold:{cli-knwon}*')).toEqual([]);
    // The plain queue exists; as a partitioned one (partition 0 is cli-known#0) it does not.
    const partitioned = spawnSync(process.execPath, [CLI, 'dashboard', '--redis', redis.url, '--name', 'cli-known', '--max-attempts', '5', '--partitions', '2'], {
      encoding: 'utf8', timeout: 30_000,
    });
    expect(partitioned.status).toBe(1);
    expect(partitioned.stderr).toMatch(/No queue named "cli-known"/);
  });
});
