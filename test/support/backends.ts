/**
 * The backends the conformance suite runs against, and how a rule file runs
 * once per backend.
 *
 * A rule file wraps each `describe` in `describeEachBackend(title, (backend) => ...)`
 * and opens its queues with `setup(backend, ...)` (test/support/helpers.ts) or
 * `openQueue(backend, ...)`. Every queue call is awaited, so one suite checks
 * a synchronous queue and one whose every method returns a Promise alike.
 *
 * To add a backend (Redis): write its `Backend` object (in its own harness
 * file if it needs one) and add it to `ALL_BACKENDS` below. Nothing else changes.
 * `LEASEHOLD_BACKENDS=redis` (a comma-separated list of names) runs only the
 * named backends, e.g. while working on one.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, onTestFinished } from 'vitest';
import {
  JobQueue,
  type FailError,
  type FlowJob,
  type FailOptions,
  type FinishedOptions,
  type JobLogs,
  type JobPage,
  type JobQuery,
  type JobQueueOptions,
  type JobView,
  type Lease,
  type ManualClock,
  type NewJob,
  type Payload,
  type QueueStats,
  type RateLimit,
  type ReleaseOptions,
  type RetryPolicy,
  type ScheduleOptions,
  type ScheduleView,
  type SubmitOptions,
  type TypeRateLimit,
  type TypeRetryPolicy,
  type ConcurrencyCaps,
  type GroupConcurrencyCap,
} from '../../dist/index.js';
import { redisClusterBackend } from './redis-cluster-harness.js';
import { redisBackend, redisPartitionedBackend } from './redis-harness.js';

type Awaitable<T> = T | Promise<T>;

/**
 * The queue contract as the conformance tests use it: every method
 * of `JobQueue` except the shared-memory ones (`share`, `attach`), with each
 * result either plain or a Promise. A backend whose methods return Promises
 * rejects where `JobQueue` throws, with the same error classes and codes.
 */
export interface ContractQueue {
  submit(type: string, payload?: Payload | null, priorityOrOptions?: number | SubmitOptions, runAtMillis?: number): Awaitable<string>;
  submitMany(jobs: readonly NewJob[]): Awaitable<string[]>;
  submitFlow(flow: FlowJob): Awaitable<string[]>;
  /** Synchronous on every backend (nothing to ask a server): shared memory to write a payload in place, or a plain Uint8Array. */
  reserveBytes(byteLength: number): Uint8Array;
  releaseBytes(bytes: Uint8Array): void;
  childResults(parentId: string): Awaitable<Record<string, unknown>>;
  poll(workerId: string, leaseMillis: number): Awaitable<Lease | undefined>;
  complete(jobId: string, token: number, result?: unknown): Awaitable<void>;
  completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number, result?: unknown): Awaitable<Lease | undefined>;
  /** Long-lived by design: it may be awaited while other calls run. */
  finished(jobId: string, options?: FinishedOptions): Promise<unknown>;
  fail(jobId: string, token: number, error?: FailError, options?: FailOptions): Awaitable<void>;
  release(jobId: string, token: number, options?: ReleaseOptions): Awaitable<void>;
  extend(jobId: string, token: number, leaseMillis: number): Awaitable<number>;
  progress(jobId: string, token: number, value: number): Awaitable<void>;
  log(jobId: string, line: string): Awaitable<void>;
  logs(jobId: string): Awaitable<JobLogs>;
  view(jobId: string): Awaitable<JobView>;
  deadLetters(): Awaitable<JobView[]>;
  jobs(query?: JobQuery): Awaitable<JobPage>;
  retryDead(jobId: string): Awaitable<void>;
  cancel(jobId: string): Awaitable<void>;
  remove(jobId: string): Awaitable<void>;
  changePriority(jobId: string, priority: number): Awaitable<void>;
  changeDelay(jobId: string, delayMillis: number): Awaitable<void>;
  promote(jobId: string): Awaitable<void>;
  updatePayload(jobId: string, payload: Payload | null): Awaitable<void>;
  queueDepth(): Awaitable<number>;
  dlqDepth(): Awaitable<number>;
  stats(): Awaitable<QueueStats>;
  pause(): Awaitable<void>;
  resume(): Awaitable<void>;
  isPaused(): Awaitable<boolean>;
  setRateLimit(type: string, limit: RateLimit | null): Awaitable<void>;
  rateLimits(): Awaitable<TypeRateLimit[]>;
  setRetryPolicy(type: string, policy: RetryPolicy | null): Awaitable<void>;
  retryPolicies(): Awaitable<TypeRetryPolicy[]>;
  setConcurrency(...args: [max: number | null] | [type: string, max: number | null]): Awaitable<void>;
  concurrencyCaps(): Awaitable<ConcurrencyCaps>;
  setGroupConcurrency(group: string, max: number | null): Awaitable<void>;
  groupConcurrencyCaps(): Awaitable<GroupConcurrencyCap[]>;
  schedule(name: string, options: ScheduleOptions): Awaitable<ScheduleView>;
  unschedule(name: string): Awaitable<boolean>;
  schedules(): Awaitable<ScheduleView[]>;
  runSchedules(): Awaitable<string[]>;
  /** Releases everything the backend made for this queue (files, connections). Safe to call twice. */
  close(): Awaitable<void>;
}

export interface Backend {
  /** Shown in every test name: `submit: ids [journal] > ...`. */
  name: string;
  /**
   * A new, empty queue on `clock` and `policy`: its ids start at J1 and it
   * shares no jobs with any other queue. Bad options reject with
   * InvalidArgumentError. Tests open queues through `openQueue`, which closes
   * them when the test ends, passed or failed.
   */
  open(clock: ManualClock, policy: RetryPolicy, options?: JobQueueOptions): Promise<ContractQueue>;
  /**
   * Why this backend cannot run here (e.g. "redis-server is not on PATH"), or
   * null if it can. Its tests are then skipped, not failed. Asked once per file.
   */
  unavailable?: () => string | null;
}

/** The queue in shared memory: `new JobQueue`, its methods synchronous. */
export const memory: Backend = {
  name: 'memory',
  async open(clock, policy, options) {
    return new JobQueue(clock, policy, options);
  },
};

/**
 * The same queue as other threads see it: `new JobQueue`, shared, and used
 * through an instance attached to its handle (as a worker thread would). A
 * queue never shared is exclusive (its moves skip the protocol that orders
 * them against other threads'); this backend runs the contract on the
 * shared protocol.
 */
export const sharedMemory: Backend = {
  name: 'shared',
  async open(clock, policy, options) {
    const owner = new JobQueue(clock, policy, options);
    const attached = JobQueue.attach(owner.share(), clock);
    // Closing the attached instance closes the owner too.
    attached.close = () => {
      JobQueue.prototype.close.call(attached);
      owner.close();
    };
    return attached;
  },
};

/**
 * Where the journal backend puts its files: in memory (/dev/shm) where there
 * is one, as the conformance tests check the contract, not durability (the
 * journal tests do that on a real disk), and an fsync there costs nothing.
 */
const JOURNAL_DIR = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

/**
 * The journaled queue: `JobQueue.open` on a fresh SQLite file in its own temp
 * directory, removed on close. It is reached through `asRemote`, so the suite
 * also runs, today, against the shape the Redis backend has.
 */
export const journal: Backend = {
  name: 'journal',
  async open(clock, policy, options) {
    const dir = mkdtempSync(join(JOURNAL_DIR, 'leasehold-conform-'));
    const removeDir = () => rmSync(dir, { recursive: true, force: true });
    try {
      const queue = JobQueue.open(join(dir, 'queue.db'), clock, policy, { ...options, synchronous: 'NORMAL' });
      return asRemote(queue, removeDir);
    } catch (error) {
      removeDir();
      throw error;
    }
  },
};

/** Every backend the conformance suite runs against: add a new one here. */
const ALL_BACKENDS: readonly Backend[] = [memory, sharedMemory, journal, redisBackend, redisClusterBackend];

/**
 * Backends only the rule files that name them run (see `describeEachBackendAnd`): the partitioned
 * Redis queue, whose jobs live in one partition each, for the rules about one job at a time.
 */
const OPT_IN_BACKENDS: readonly Backend[] = [redisPartitionedBackend];

/** The backends of this run: all of them, or those `LEASEHOLD_BACKENDS` names. */
export const BACKENDS: readonly Backend[] = chosen(ALL_BACKENDS, process.env['LEASEHOLD_BACKENDS'], [...ALL_BACKENDS, ...OPT_IN_BACKENDS]);

function chosen(all: readonly Backend[], names: string | undefined, known: readonly Backend[] = all): readonly Backend[] {
  if (names === undefined || names.trim() === '') return all;
  const wanted = names.split(',').map((name) => name.trim());
  const unknown = wanted.filter((name) => !known.some((backend) => backend.name === name));
  if (unknown.length > 0) {
    throw new Error(`LEASEHOLD_BACKENDS names unknown backends ${unknown.join(', ')}; known: ${known.map((b) => b.name).join(', ')}`);
  }
  return all.filter((backend) => wanted.includes(backend.name));
}

const reasons = new Map<Backend, string | null>();

/** Why `backend` cannot run here, asked once per file (and said once). */
function unavailableReason(backend: Backend): string | null {
  if (!reasons.has(backend)) {
    const reason = backend.unavailable?.() ?? null;
    if (reason !== null) console.warn(`[${backend.name}] conformance tests skipped: ${reason}`);
    reasons.set(backend, reason);
  }
  return reasons.get(backend)!;
}

/**
 * `describe(title, body)` once per backend, named `title [backend]`. The tests
 * of a backend that is unavailable here are registered but skipped.
 */
export function describeEachBackend(title: string, body: (backend: Backend) => void): void {
  describeOn(BACKENDS, title, body);
}

/** `describeEachBackend`, and on the opt-in backends too (the partitioned Redis queue): for rules that hold per job. */
export function describeEachBackendAnd(title: string, body: (backend: Backend) => void): void {
  describeOn([...BACKENDS, ...chosen(OPT_IN_BACKENDS, process.env['LEASEHOLD_BACKENDS'], [...ALL_BACKENDS, ...OPT_IN_BACKENDS])], title, body);
}

function describeOn(backends: readonly Backend[], title: string, body: (backend: Backend) => void): void {
  const runnable = backends.filter((backend) => unavailableReason(backend) === null);
  const skipped = backends.filter((backend) => unavailableReason(backend) !== null);
  const each = (backends: readonly Backend[], skip: boolean) => {
    if (backends.length === 0) return;
    // `{ skip }`, not `describe.skip.for`: vitest 4.1 runs the suites of `describe.skip.for` anyway.
    describe.for(backends.map((backend) => [backend.name, backend] as const))(`${title} [%s]`, { skip }, ([, backend]) => body(backend));
  };
  each(runnable, false);
  each(skipped, true);
}

/** A queue from `backend` for the running test, closed when the test ends, whether it passed or failed. */
export async function openQueue(
  backend: Backend,
  clock: ManualClock,
  policy: RetryPolicy,
  options?: JobQueueOptions,
): Promise<ContractQueue> {
  const queue = await backend.open(clock, policy, options);
  onTestFinished(async () => {
    await queue.close();
  });
  return queue;
}

/**
 * `queue` behind the surface a remote backend has: every call returns a
 * Promise that settles on a later turn of the event loop, and a bad argument
 * rejects instead of throwing. The conformance tests make one call at a time,
 * so a call made while another is unsettled (the close after the test
 * included) is a missing `await` in the test: it fails here, at once, rather
 * than turning up later as a race against Redis.
 */
function asRemote(queue: JobQueue, release: () => void): ContractQueue {
  let unsettled: string | undefined;
  const call = async <T>(name: string, run: () => T): Promise<T> => {
    if (unsettled !== undefined) {
      throw new Error(`${name}() was called while ${unsettled}() had not settled: a missing await in the test`);
    }
    unsettled = name;
    try {
      await new Promise((resolve) => setImmediate(resolve)); // a later turn of the event loop, as a round trip would be
      return run();
    } finally {
      unsettled = undefined;
    }
  };
  return {
    submit: (...args) => call('submit', () => queue.submit(...args)),
    submitMany: (...args) => call('submitMany', () => queue.submitMany(...args)),
    submitFlow: (...args) => call('submitFlow', () => queue.submitFlow(...args)),
    // Synchronous on every backend, as on JobQueue itself: not through `call`.
    reserveBytes: (byteLength) => queue.reserveBytes(byteLength),
    releaseBytes: (bytes) => queue.releaseBytes(bytes),
    childResults: (...args) => call('childResults', () => queue.childResults(...args)),
    poll: (...args) => call('poll', () => queue.poll(...args)),
    complete: (...args) => call('complete', () => queue.complete(...args)),
    completeAndPoll: (...args) => call('completeAndPoll', () => queue.completeAndPoll(...args)),
    fail: (...args) => call('fail', () => queue.fail(...args)),
    release: (...args) => call('release', () => queue.release(...args)),
    extend: (...args) => call('extend', () => queue.extend(...args)),
    progress: (...args) => call('progress', () => queue.progress(...args)),
    log: (...args) => call('log', () => queue.log(...args)),
    logs: (...args) => call('logs', () => queue.logs(...args)),
    view: (...args) => call('view', () => queue.view(...args)),
    // Not through `call`: a wait for a job's finish overlaps the calls that finish it.
    finished: (...args) => queue.finished(...args),
    deadLetters: () => call('deadLetters', () => queue.deadLetters()),
    jobs: (...args) => call('jobs', () => queue.jobs(...args)),
    retryDead: (...args) => call('retryDead', () => queue.retryDead(...args)),
    cancel: (...args) => call('cancel', () => queue.cancel(...args)),
    remove: (...args) => call('remove', () => queue.remove(...args)),
    changePriority: (...args) => call('changePriority', () => queue.changePriority(...args)),
    changeDelay: (...args) => call('changeDelay', () => queue.changeDelay(...args)),
    promote: (...args) => call('promote', () => queue.promote(...args)),
    updatePayload: (...args) => call('updatePayload', () => queue.updatePayload(...args)),
    queueDepth: () => call('queueDepth', () => queue.queueDepth()),
    dlqDepth: () => call('dlqDepth', () => queue.dlqDepth()),
    stats: () => call('stats', () => queue.stats()),
    pause: () => call('pause', () => queue.pause()),
    resume: () => call('resume', () => queue.resume()),
    isPaused: () => call('isPaused', () => queue.isPaused()),
    setRateLimit: (...args) => call('setRateLimit', () => queue.setRateLimit(...args)),
    rateLimits: () => call('rateLimits', () => queue.rateLimits()),
    setRetryPolicy: (...args) => call('setRetryPolicy', () => queue.setRetryPolicy(...args)),
    retryPolicies: () => call('retryPolicies', () => queue.retryPolicies()),
    setConcurrency: (...args) => call('setConcurrency', () => (queue.setConcurrency as (...a: unknown[]) => void)(...args)),
    concurrencyCaps: () => call('concurrencyCaps', () => queue.concurrencyCaps()),
    setGroupConcurrency: (...args) => call('setGroupConcurrency', () => queue.setGroupConcurrency(...args)),
    groupConcurrencyCaps: () => call('groupConcurrencyCaps', () => queue.groupConcurrencyCaps()),
    schedule: (...args) => call('schedule', () => queue.schedule(...args)),
    unschedule: (...args) => call('unschedule', () => queue.unschedule(...args)),
    schedules: () => call('schedules', () => queue.schedules()),
    runSchedules: () => call('runSchedules', () => queue.runSchedules()),
    // Always releases (it also runs after a failed test), then reports an unsettled call like the others.
    close: async () => {
      const late = unsettled;
      try {
        queue.close();
      } finally {
        release();
      }
      if (late !== undefined) throw new Error(`close() was called while ${late}() had not settled: a missing await in the test`);
    },
  };
}
