/**
 * Shared helpers for the conformance tests (run once per backend, see
 * test/support/backends.ts) and for the model, thread, chaos, journal and pool tests.
 *
 * The conformance helpers are async: a backend's methods may return Promises
 * (Redis), so `await setup(backend)`, `await mustPoll(queue)`,
 * `await expectInvalid(() => queue.submit(''))` — the error helpers accept a
 * synchronous throw and a rejection alike. Code that is synchronous by nature
 * (constructors, a `JobQueue` in a thread test) uses the `...Sync` variants.
 *
 * Append only: other test files (and other engineers) rely on these names.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import {
  IllegalStateError,
  InvalidArgumentError,
  JobNotFoundError,
  JobQueue,
  ManualClock,
  QueueFullError,
  RetryPolicy,
  StaleLeaseError,
  type JobQueueOptions,
  type JobView,
  type Lease,
  type QueueStats,
  type SharedQueueHandle,
} from '../../dist/index.js';
import { PATIENCE } from '../../dist/testing/core-internals.js';
import { openQueue, type Backend, type ContractQueue } from './backends.js';

/** The time every test queue starts at: far from 0, so "0" is never a lucky right answer. */
export const T0 = 1_000_000;

/** Passes a value of the wrong type through the type checker, to test validation at the edge. */
export function bad(value: unknown): never {
  return value as never;
}

/** A proxy trap, or a getter, that throws the caller's own error (not a JobQueueError). */
export function throwsWhenRead(): never {
  throw new Error('read me not');
}

/**
 * An options object that throws the caller's own error as it is read: a
 * proxy each of whose traps throws, or (`key`) a plain object whose getter
 * for `key` throws. Passed where an object is expected, to test that the
 * edge refuses it with InvalidArgumentError rather than letting the error out.
 */
export function unreadable(key?: string): never {
  if (key !== undefined) return Object.defineProperty({}, key, { enumerable: true, get: throwsWhenRead }) as never;
  const traps = { ownKeys: throwsWhenRead, get: throwsWhenRead, getOwnPropertyDescriptor: throwsWhenRead, has: throwsWhenRead, getPrototypeOf: throwsWhenRead };
  return new Proxy({}, traps) as never;
}

export interface Setup {
  clock: ManualClock;
  policy: RetryPolicy;
  queue: ContractQueue;
}

export interface SetupOptions {
  maxAttempts?: number;
  baseBackoffMillis?: number;
  maxBackoffMillis?: number;
  start?: number;
  options?: JobQueueOptions;
}

/**
 * A queue of `backend` on a ManualClock at T0 with a deterministic policy (no
 * jitter): by default 3 attempts, backoff 100, 200, 400, ... capped at 10 000 ms.
 * Closed when the test ends.
 */
export async function setup(backend: Backend, opts: SetupOptions = {}): Promise<Setup> {
  const clock = new ManualClock(opts.start ?? T0);
  const policy = new RetryPolicy(opts.maxAttempts ?? 3, opts.baseBackoffMillis ?? 100, opts.maxBackoffMillis ?? 10_000);
  const queue = await openQueue(backend, clock, policy, opts.options);
  return { clock, policy, queue };
}

/** Runs `fn` and returns what it threw or rejected with; fails the test if it settled normally. */
export async function thrownBy(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  return expect.unreachable('expected the call to throw or reject, but it returned normally');
}

type ErrorClass<E> = abstract new (...args: never[]) => E;

function checkError<E extends Error>(error: unknown, cls: ErrorClass<E>, code: string): E {
  expect(error).toBeInstanceOf(cls);
  expect((error as { code?: unknown }).code).toBe(code);
  return error as E;
}

/** Asserts that `fn` throws or rejects with an instance of `cls` carrying exactly `code`, and returns the error. */
export async function expectError<E extends Error>(fn: () => unknown, cls: ErrorClass<E>, code: string): Promise<E> {
  return checkError(await thrownBy(fn), cls, code);
}

export function expectInvalid(fn: () => unknown): Promise<InvalidArgumentError> {
  return expectError(fn, InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
}

export function expectNotFound(fn: () => unknown): Promise<JobNotFoundError> {
  return expectError(fn, JobNotFoundError, 'ERR_JOB_NOT_FOUND');
}

/** An IllegalStateError that is not a StaleLeaseError (code ERR_ILLEGAL_STATE exactly). */
export function expectIllegalState(fn: () => unknown): Promise<IllegalStateError> {
  return expectError(fn, IllegalStateError, 'ERR_ILLEGAL_STATE');
}

export function expectStale(fn: () => unknown): Promise<StaleLeaseError> {
  return expectError(fn, StaleLeaseError, 'ERR_STALE_LEASE');
}

export function expectFull(fn: () => unknown): Promise<QueueFullError> {
  return expectError(fn, QueueFullError, 'ERR_QUEUE_FULL');
}

/** Polls and asserts that a lease came back (optionally for `jobId`). */
export async function mustPoll(queue: ContractQueue, jobId?: string, leaseMillis = 1_000, workerId = 'w1'): Promise<Lease> {
  const lease = await queue.poll(workerId, leaseMillis);
  expect(lease, 'expected poll to hand out a job').toBeDefined();
  if (jobId !== undefined) expect(lease!.jobId).toBe(jobId);
  return lease!;
}

/** Ids handed out by polling until nothing is ready, completing each job at once. */
export async function drainOrder(queue: ContractQueue): Promise<string[]> {
  const order: string[] = [];
  for (let lease = await queue.poll('w', 1_000); lease !== undefined; lease = await queue.poll('w', 1_000)) {
    order.push(lease.jobId);
    await queue.complete(lease.jobId, lease.token);
    if (order.length > 10_000) throw new Error('drainOrder: runaway');
  }
  return order;
}

/**
 * Fails `jobId` until it is DEAD: waits out each backoff, polls it (it must be the
 * job handed out) and fails it with `error`. Returns the number of attempts made here.
 */
export async function killJob(s: Setup, jobId: string, error = 'boom'): Promise<number> {
  let made = 0;
  while ((await s.queue.view(jobId)).status !== 'DEAD') {
    expect((await s.queue.view(jobId)).status).toBe('PENDING');
    s.clock.advance(s.policy.maxBackoffMillis + 1);
    const lease = await mustPoll(s.queue, jobId);
    await s.queue.fail(jobId, lease.token, error);
    made++;
    if (made > s.policy.maxAttempts) throw new Error(`killJob: ${jobId} not DEAD after ${made} attempts`);
  }
  return made;
}

/** Everything observable about a queue, for "a failed call changes nothing" comparisons. */
export interface Snapshot {
  stats: QueueStats;
  queueDepth: number;
  dlqDepth: number;
  deadLetters: JobView[];
  views: Record<string, JobView | { error: string }>;
}

/** Reads every observable piece of state; views of missing jobs record the error code. */
export async function snapshot(queue: ContractQueue, ids: readonly string[]): Promise<Snapshot> {
  const views: Snapshot['views'] = {};
  for (const id of ids) {
    try {
      views[id] = { ...(await queue.view(id)) };
    } catch (error) {
      views[id] = { error: String((error as { code?: unknown }).code ?? error) };
    }
  }
  return {
    stats: { ...(await queue.stats()) },
    queueDepth: await queue.queueDepth(),
    dlqDepth: await queue.dlqDepth(),
    deadLetters: (await queue.deadLetters()).map((v) => ({ ...v })),
    views,
  };
}

/** Asserts that `fn` throws or rejects with `cls` and that the queue looks exactly as it did before. */
export async function expectNoChange<E extends Error>(
  queue: ContractQueue,
  ids: readonly string[],
  fn: () => unknown,
  cls: ErrorClass<E>,
  code: string,
): Promise<E> {
  const before = await snapshot(queue, ids);
  const error = await expectError(fn, cls, code);
  expect(await snapshot(queue, ids)).toEqual(before);
  return error;
}

// ── Synchronous variants, for code that is synchronous by nature ──

/** Runs `fn` and returns what it threw; fails the test if it returned (a Promise counts as returning). */
export function thrownBySync(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return expect.unreachable('expected the call to throw, but it returned normally');
}

/** Asserts that `fn` throws (synchronously) an instance of `cls` carrying exactly `code`, and returns the error. */
export function expectErrorSync<E extends Error>(fn: () => unknown, cls: ErrorClass<E>, code: string): E {
  return checkError(thrownBySync(fn), cls, code);
}

export function expectInvalidSync(fn: () => unknown): InvalidArgumentError {
  return expectErrorSync(fn, InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
}

export function expectNotFoundSync(fn: () => unknown): JobNotFoundError {
  return expectErrorSync(fn, JobNotFoundError, 'ERR_JOB_NOT_FOUND');
}

export function expectIllegalStateSync(fn: () => unknown): IllegalStateError {
  return expectErrorSync(fn, IllegalStateError, 'ERR_ILLEGAL_STATE');
}

/** `mustPoll` on a `JobQueue` itself (journal and thread tests). */
export function mustPollSync(queue: JobQueue, jobId?: string, leaseMillis = 1_000, workerId = 'w1'): Lease {
  const lease = queue.poll(workerId, leaseMillis);
  expect(lease, 'expected poll to hand out a job').toBeDefined();
  if (jobId !== undefined) expect(lease!.jobId).toBe(jobId);
  return lease!;
}

/** `length` bytes that are not valid UTF-8 (they start 0xff 0xfe), with every byte value in them: a binary payload or result. */
export function bytesOf(length: number, seed = 1): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + seed) & 0xff;
  if (length > 1) bytes.set([0xff, 0xfe], 0);
  return bytes;
}

/** UTF-8 length of a string. */
export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

// ── Helpers for the model, thread and chaos tests (model.test.ts, threads.test.ts, chaos.test.ts) ──

/**
 * The seed of a randomized test: `LEASEHOLD_SEED` if set (to replay a failure),
 * else a fresh one. Printed either way, so every failure can be replayed.
 */
export function testSeed(name: string): number {
  const fromEnv = process.env['LEASEHOLD_SEED'];
  const seed = fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
  console.log(`[${name}] seed ${seed} (replay: LEASEHOLD_SEED=${seed})`);
  return seed;
}

/** How often the queue `handle` names has doubled its patience: live threads it took for dead (see src/shm/patience.ts). */
export function patienceDoublings(handle: SharedQueueHandle): number {
  return Atomics.load(new Int32Array(handle.buffers.lockWords), PATIENCE);
}

/** The project's seeded PRNG (mulberry32): the same seed gives the same sequence in every thread. */
export { prng } from '../../dist/cli/random.js';

/** The n of a job id "Jn", or undefined if the id is not of that form. */
export function jobNumber(id: string): number | undefined {
  const m = /^J([1-9][0-9]*)$/.exec(id);
  return m === null ? undefined : Number(m[1]);
}

/**
 * A TimeSource of the test's own, one integer-millisecond word in shared
 * memory, so threads that attach with `JobQueue.attach(handle, clock)` and the
 * test itself read the same time. Mirrors test/fixtures/lib.mjs `SharedClock`.
 */
export class SharedClock {
  readonly buffer: SharedArrayBuffer;
  readonly #word: BigInt64Array;
  constructor(start: number, buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(8);
    this.#word = new BigInt64Array(this.buffer);
    if (buffer === undefined) Atomics.store(this.#word, 0, BigInt(start));
  }
  now(): number {
    return Number(Atomics.load(this.#word, 0));
  }
  advance(ms: number): void {
    Atomics.add(this.#word, 0, BigInt(ms));
  }
}

export interface RunningWorker {
  worker: import('node:worker_threads').Worker;
  /** The first message the worker posts; rejects if it errors or exits first. */
  result: Promise<unknown>;
  /** Resolves with the exit code whenever the thread ends (also after terminate()). */
  exited: Promise<number>;
}

/** Starts a fixture thread (test/fixtures/*.mjs) with `workerData`. */
export async function startWorker(file: string, workerData: unknown): Promise<RunningWorker> {
  const { Worker } = await import('node:worker_threads');
  const worker = new Worker(new URL(`../fixtures/${file}`, import.meta.url), { workerData });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const result = new Promise<unknown>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`worker ${file} exited with code ${code} before reporting`)));
  });
  result.catch(() => undefined); // observed by whoever awaits it; never an unhandled rejection
  return { worker, result, exited };
}

/** Rejects with "`what` did not finish within `ms` ms" if `promise` takes longer. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms` real milliseconds (pacing only, never synchronization). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Ends fixture threads, whether they finished, hang or are stuck at a barrier; never throws. */
export async function terminateAll(workers: readonly RunningWorker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.worker.terminate().catch(() => undefined)));
}

/**
 * A bounded wait on a condition (sync or async), not a sleep: resolves as soon
 * as it holds, fails with `what` after `ms`. Looks again every few milliseconds.
 */
export async function waitUntil(what: string, condition: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for: ${what}`);
    await pause(5);
  }
}

/**
 * A fixture process (test/fixtures/*.mjs, given the handle as JSON in argv[2])
 * that talks JSON lines: the test writes orders on its stdin, it answers
 * each on stdout. `close` sends `closeLine` and waits for it to exit.
 */
export class JsonLinesChild<Answer> {
  readonly #child: import('node:child_process').ChildProcess;
  readonly #lines: AsyncIterator<string>;
  readonly #what: string;

  constructor(fixture: string, handle: unknown, what: string) {
    this.#what = what;
    const file = fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url));
    this.#child = spawn(process.execPath, [file, JSON.stringify(handle)], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.#lines = createInterface({ input: this.#child.stdout! })[Symbol.asyncIterator]();
  }

  /** The next answer; fails if none comes within 20 s or the process ended. */
  async next(): Promise<Answer> {
    const { value, done } = await withTimeout(this.#lines.next(), 20_000, this.#what);
    if (done === true) throw new Error(`${this.#what} ended`);
    return JSON.parse(value as string) as Answer;
  }

  write(line: string): void {
    this.#child.stdin!.write(`${line}\n`);
  }

  async close(closeLine = 'close'): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.stdin!.end(`${closeLine}\n`);
    await exited;
  }
}
