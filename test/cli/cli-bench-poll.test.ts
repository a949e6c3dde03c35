/**
 * `leasehold bench poll` (the built CLI) with tiny counts: it measures every
 * form at every thread count, prints its conditions and a table, and writes
 * a well-formed SVG chart with one line per series; bad usage exits 2.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-bench-poll-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function benchPoll(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'bench', 'poll', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Why `svg` is not a well-formed SVG document (tags balanced, entities escaped, an svg root with a viewBox), or undefined. */
function svgProblem(svg: string): string | undefined {
  if (!/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" [^>]*viewBox="0 0 \d+ \d+"/.test(svg)) return 'no svg root with a viewBox';
  if (/&(?!amp;|lt;|gt;|quot;)/.test(svg)) return 'an unescaped &';
  const open: string[] = [];
  for (const [, close, name, selfClosing] of svg.matchAll(/<(\/?)([a-zA-Z]+)(?:\s[^<>]*?)?(\/?)>/g)) {
    if (close === '/') {
      if (open.pop() !== name) return `</${name}> closes nothing open`;
    } else if (selfClosing !== '/') {
      open.push(name!);
    }
  }
  if (open.length > 0) return `unclosed <${open.join('>, <')}>`;
  return svg.replace(/<[^>]*>/g, '').includes('<') ? 'a stray <' : undefined;
}

function expectRun(run: { status: number | null; stdout: string; stderr: string }, series: string[], threads: number): void {
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/Node v\d+\.\d+\.\d+ on \w+ \w+, .+, \d+ cores, load average [\d.]+ [\d.]+ [\d.]+/);
  for (const name of series) {
    const row = run.stdout.split('\n').find((line) => line.trim().startsWith(name) && !line.includes('/s'));
    expect(row, name).toBeDefined();
    const rates = row!.trim().slice(name.length).trim().split(/\s+/).map(Number);
    expect(rates, name).toHaveLength(threads);
    for (const rate of rates) expect(rate, name).toBeGreaterThan(0);
  }
}

describe('leasehold bench poll', () => {
  it('measures each form at 1 and 2 threads beside piscina, and writes a well-formed SVG chart', async () => {
    const svgPath = join(scratch, 'poll.svg');
    const run = await benchPoll('--threads', '2', '--jobs', '200', '--svg', svgPath);
    const series = ['memory: poll -> complete', 'memory: completeAndPoll', 'piscina: no-op task (reference)'];
    expectRun(run, series, 2);
    const svg = readFileSync(svgPath, 'utf8');
    expect(svgProblem(svg)).toBeUndefined();
    expect(svg.match(/<polyline /g)).toHaveLength(series.length);
    for (const name of series) expect(svg).toContain(name.replace('>', '&gt;'));
    expect(svg).toMatch(/Node v\d+/);
  });

  it.each([
    [['--threads', '0'], /--threads to be an integer from 1/],
    [['--jobs', 'many'], /--jobs to be an integer from 1/],
  ])('exits 2 on bad usage: %j', async (args, message) => {
    const run = await benchPoll(...args);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});

describeRedis('leasehold bench poll --redis-url', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('adds the Redis loops, plain and batched', async () => {
    const run = await benchPoll('--threads', '1', '--jobs', '100', '--batch', '8', '--redis-url', redis.url);
    expectRun(run, ['memory: poll -> complete', 'redis: poll -> complete', 'redis: completeManyAndPoll x8', 'piscina: no-op task (reference)'], 1);
  });
});
