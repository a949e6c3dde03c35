/**
 * `leasehold stress` (the built CLI): exit 0 on the real queue of each
 * backend, with and without thread kills, and on Redis with processes; exit 1, naming the first
 * violation, on a queue deliberately broken by a wrapper
 * (test/fixtures/history-broken-queue.mjs); with --edits (releases, removes,
 * edits of pending jobs) and --groups (grouped submits and caps on the
 * groups, checked as relaxed-order) too; the same plans for the same seed;
 * exit 2 on bad usage.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const BROKEN = fileURLToPath(new URL('../fixtures/history-broken-queue.mjs', import.meta.url));

function stress(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'stress', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function expectPass(run: { status: number | null; stdout: string; stderr: string }): void {
  expect(run.stdout, run.stderr).toContain('verdict: PASS');
  expect(run.status).toBe(0);
  expect(run.stdout).toMatch(/property: no job leased twice at once: ok in \d+ of \d+ histories/);
  expect(run.stdout).toMatch(/property: every submitted job accounted for: ok/);
  expect(run.stdout).toMatch(/property: history checker: (relaxed-poll|relaxed-order|linearizable): ok/);
  expect(run.stdout).toMatch(/calls that really overlapped a call of another (thread|process): \d+/);
  expect(run.stdout).toMatch(/replay .*: leasehold stress .*--seed \d+/);
}

describe('leasehold stress', () => {
  it('exits 0 on the shared-memory queue, printing calls, overlaps, each property and a replay seed', async () => {
    const run = await stress('--threads', '3', '--histories', '30', '--seed', '5');
    expectPass(run);
    expect(run.stdout).toMatch(/calls made: [1-9]\d* in 30 histories/);
  });

  it('exits 0 with threads killed inside calls, counting the kills and the calls left pending', async () => {
    const run = await stress('--threads', '3', '--histories', '20', '--kill-every', '6', '--seed', '6');
    expectPass(run);
    const killed = /threads killed: (\d+)/.exec(run.stdout);
    expect(Number(killed?.[1])).toBeGreaterThan(0);
  });

  it('exits 0 with --edits: releases, removes and edits of pending jobs race the other calls, threads killed inside them too', async () => {
    const run = await stress('--edits', '--threads', '3', '--histories', '30', '--kill-every', '7', '--seed', '12');
    expectPass(run);
    expect(run.stdout).toMatch(/replay .*: leasehold stress .*--edits/);
    expect(Number(/threads killed: (\d+)/.exec(run.stdout)?.[1])).toBeGreaterThan(0);
  });

  it('exits 0 with --groups: grouped submits and group caps race claims and kills, checked as relaxed-order', async () => {
    const run = await stress('--groups', '--edits', '--threads', '3', '--histories', '30', '--kill-every', '9', '--seed', '14');
    expectPass(run);
    expect(run.stdout).toMatch(/property: history checker: relaxed-order: ok/);
    expect(run.stdout).toMatch(/replay .*: leasehold stress .*--groups/);
    expect(run.stdout).toMatch(/group caps set, changed or removed: [1-9]/);
  });

  it('exits 0 on a journaled queue', async () => {
    expectPass(await stress('--backend', 'journal', '--threads', '2', '--histories', '10', '--seed', '7'));
  });

  it('exits 1 on a queue whose poll skips the best job, naming the first violation and the seed of its history', async () => {
    const run = await stress('--threads', '3', '--histories', '30', '--seed', '11', '--wrapper', BROKEN);
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('verdict: FAIL');
    expect(run.stdout).toMatch(/property: history checker: relaxed-poll: FAILED in [1-9]\d* of 30 histories/);
    expect(run.stdout).toMatch(/first failure of "history checker: relaxed-poll", history seed \d+:\nfirst violation: .*poll/);
    expect(run.stdout).toContain('better ready job');
  });

  it('makes the same plans for the same seed: one thread, whose history is then all plan, prints the same counts', async () => {
    const counts = (out: string) => out.split('\n').filter((line) => line.startsWith('calls made'));
    const [a, b] = await Promise.all([stress('--threads', '1', '--histories', '8', '--seed', '42'), stress('--threads', '1', '--histories', '8', '--seed', '42')]);
    const c = await stress('--threads', '1', '--histories', '8', '--seed', '43');
    expect(counts(a.stdout)).toHaveLength(1);
    expect(counts(a.stdout)).toEqual(counts(b.stdout));
    expect(counts(c.stdout)).not.toEqual(counts(a.stdout));
  });

  it.each([
    [['--backend', 'redis'], /--redis-url/],
    [['--redis-url', 'redis://127.0.0.1:1'], /--redis-url/],
    [['--backend', 'sqlite'], /Allowed choices are memory, journal, redis/],
    [['--threads', '0'], /--threads to be an integer from 1/],
    [['--kill-every', '-1'], /--kill-every to be an integer from 0/],
    [['--mode', 'serializable'], /Allowed choices are linearizable, relaxed-poll/],
    [['--processes'], /--processes needs --backend redis/],
  ])('exits 2 on bad usage: %j', async (args, message) => {
    const run = await stress(...args);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});

describeRedis('leasehold stress --backend redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('exits 0 on a Redis queue, checked as relaxed-poll while threads move the clock', async () => {
    const run = await stress('--backend', 'redis', '--redis-url', redis.url, '--threads', '3', '--histories', '10', '--seed', '8');
    expectPass(run);
    expect(run.stdout).toContain('mode relaxed-poll');
  });

  it('exits 0 with processes racing, some killed with SIGKILL, their histories merged by INCR stamps', async () => {
    const run = await stress('--backend', 'redis', '--redis-url', redis.url, '--processes', '--threads', '3', '--histories', '4', '--kill-every', '9', '--seed', '9');
    expectPass(run);
    expect(run.stdout).toContain('3 processes x up to 10 calls');
    expect(run.stdout).toContain('mode linearizable');
    expect(Number(/processes killed: (\d+)/.exec(run.stdout)?.[1])).toBeGreaterThan(0);
    expect(run.stdout).toMatch(/calls that really overlapped a call of another process: [1-9]/);
  });

  it('exits 0 with processes racing releases, removes and edits, checked as linearizable', async () => {
    const run = await stress('--backend', 'redis', '--redis-url', redis.url, '--processes', '--edits', '--threads', '3', '--histories', '4', '--seed', '13');
    expectPass(run);
    expect(run.stdout).toContain('mode linearizable');
  });
});
