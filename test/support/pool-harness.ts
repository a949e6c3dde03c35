/**
 * The harness of the WorkerPool tests: handlers (test/fixtures/pool-handlers.mjs)
 * report by appending JSON lines to a log in a temp directory named in their
 * payload; pools and directories are cleaned up after every test, so no thread
 * outlives its test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import type { PoolQueue, WorkerPool } from '../../dist/index.js';
import { pause } from './helpers.js';

export const HANDLERS = new URL('../fixtures/pool-handlers.mjs', import.meta.url);

export interface LogLine {
  ev: string;
  jobId: string;
  type: string;
  attempt: number;
  threadId: number;
  t: number;
  [field: string]: unknown;
}

/** A temp directory for one test's handlers: payloads point at it, handlers log into it. */
export class Scratch {
  readonly dir = mkdtempSync(join(tmpdir(), 'leasehold-pool-'));
  payload(fields: Record<string, unknown> = {}): string {
    return JSON.stringify({ dir: this.dir, ...fields });
  }
  lines(): LogLine[] {
    const file = join(this.dir, 'log');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as LogLine);
  }
  events(ev: string, jobId?: string): LogLine[] {
    return this.lines().filter((line) => line.ev === ev && (jobId === undefined || line.jobId === jobId));
  }
  /** Creates the file a handler waits for. */
  signal(name: string): void {
    appendFileSync(join(this.dir, name), '');
  }
}

const scratches: Scratch[] = [];
const pools: { close(): Promise<void> }[] = [];
const queues: { close(): unknown }[] = [];

export function scratch(): Scratch {
  const s = new Scratch();
  scratches.push(s);
  return s;
}

/** A pool closed after the test whatever happens, so no thread outlives its test. Either backend. */
export function track<Q extends PoolQueue>(pool: WorkerPool<Q>): WorkerPool<Q> {
  pools.push(pool);
  return pool;
}

/** A queue (a RedisJobQueue's connection, say) closed after the test, once its pools are closed. */
export function trackQueue<T extends { close(): unknown }>(queue: T): T {
  queues.push(queue);
  return queue;
}

afterEach(async () => {
  await Promise.allSettled(pools.splice(0).map((pool) => pool.close()));
  await Promise.allSettled(queues.splice(0).map(async (queue) => queue.close()));
  for (const s of scratches.splice(0)) rmSync(s.dir, { recursive: true, force: true });
});

/**
 * Brings every loop of `pool` up: `threads` jobs that must all run at once (the `meet` handler), so on
 * `threads` threads. Returns their ids (a test counting its own jobs leaves them out). Before a batch of
 * jobs that a test wants run by several threads: without it, a loop slow to start on a busy machine may
 * find the others have run them all.
 */
export async function bringUpLoops(queue: { submit(type: string, payload: string): string }, pool: WorkerPool, s: Scratch, threads: number): Promise<string[]> {
  const ids = Array.from({ length: threads }, () => queue.submit('meet', s.payload({ group: 'warm-up', parties: threads })));
  await pool.drain();
  const met = new Set(s.events('ok').filter((line) => ids.includes(line.jobId)).map((line) => line.threadId));
  if (met.size !== threads) throw new Error(`the warm-up jobs met on ${met.size} threads, not ${threads}`);
  return ids;
}

/** Polls `condition` until it holds; fails with `what` (and the state `explain` gives) after `ms`. */
export async function until(what: string, condition: () => boolean, ms = 10_000, explain: () => unknown = () => ''): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for: ${what} ${JSON.stringify(explain())}`);
    await pause(5);
  }
}

/** How many times each value occurs. */
export function counts<T>(values: readonly T[]): Map<T, number> {
  const seen = new Map<T, number>();
  for (const value of values) seen.set(value, (seen.get(value) ?? 0) + 1);
  return seen;
}

/** How a child process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process running test/fixtures/pool-process.mjs. */
export interface PoolProcess {
  child: ChildProcess;
  /** Resolves once it printed `started` (its pool runs); rejects if it exits first. */
  started: Promise<void>;
  exited: Promise<Exit>;
}

const processes: ChildProcess[] = [];

/** Starts a child process running a WorkerPool as `config` says (see the fixture); killed after the test if still alive. */
export function poolProcess(config: Record<string, unknown>): PoolProcess {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../fixtures/pool-process.mjs', import.meta.url)), JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  processes.push(child);
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const started = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('started\n')) resolve();
    });
    void exited.then((exit) => reject(new Error(`the pool process exited before it started: ${JSON.stringify(exit)}`)));
  });
  started.catch(() => undefined);
  return { child, started, exited };
}

afterEach(() => {
  for (const child of processes.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
