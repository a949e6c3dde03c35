import type { Redis } from 'ioredis';
import { clockFromShare, shareClock, systemClock, type SharedClock, type TimeSource } from '../clock.js';
import { IllegalStateError, InvalidArgumentError, describe, refusalError } from '../errors.js';
import { fillOptions, type JobQueueOptions } from '../options.js';
import { policyFromShare, sharePolicy, type RetryPolicy, type SharedPolicy } from '../policy.js';
import { JobStatus, type JobView, type Lease, type QueueStats } from '../types.js';
import {
  checkFailure, checkJob, checkJobs, checkLeaseMillis, checkNow, checkPolicy, checkQueueName, checkTimeSource, checkTimeout,
  checkWorkerId, parseJobId, type CheckedJob, type FailOptions, type NewJob,
} from '../validate.js';
import {
  addressOf, backendError, connectError, createClient, duplicateClient, notConnectedError, release, type RedisTarget,
} from './connection.js';
import { queueKeys, type QueueKeys } from './keys.js';
import { COMMON_ARGS, SCRIPTS, type Script } from './scripts.js';

export type { RedisTarget };

export interface RedisQueueOptions extends Pick<JobQueueOptions, 'capacity' | 'maxPayloadBytes' | 'maxErrorBytes'> {
  /** The Redis server: a URL (`redis://host:6379/0`) or ioredis options. */
  redis: RedisTarget;
  /**
   * The queue's name: every client of one queue uses the same name, and
   * queues of different names in one Redis are independent.
   */
  name: string;
  /** Must be the same for every client of the queue (as it is for every thread of a JobQueue). */
  policy: RetryPolicy;
  /**
   * Where the queue reads `now`. Clients of one queue must agree on the time:
   * with systemClock, keep the machines' clocks synchronized and leases well
   * above their skew.
   * @default systemClock
   */
  time?: TimeSource;
  /**
   * A call without a reply for this long rejects with BackendUnavailableError
   * (a call whose outcome is unknown), so that a silent network never hangs a caller.
   * @default 10000
   */
  commandTimeoutMillis?: number;
}

const DEFAULT_COMMAND_TIMEOUT_MILLIS = 10_000;

/**
 * What `share()` returns: plain data, so it survives `postMessage` /
 * `workerData` (and JSON, for another process when the clock is systemClock).
 * `RedisJobQueue.attach(handle)` there connects to the same queue.
 */
export interface RedisQueueHandle {
  readonly kind: 'leasehold/redis-queue';
  readonly redis: RedisTarget;
  readonly name: string;
  readonly policy: SharedPolicy;
  readonly options: Required<Pick<RedisQueueOptions, 'capacity' | 'maxPayloadBytes' | 'maxErrorBytes' | 'commandTimeoutMillis'>>;
  /** The ManualClock's word, or 'system' for systemClock, or null for a clock that cannot cross threads. */
  readonly clock: SharedClock;
}

/**
 * A retrying job queue kept in Redis, with JobQueue's contract:
 * the same methods, each returning a Promise, the same validation, errors and
 * views. Any number of processes on any number of machines may use one queue
 * (one `name`) at once.
 *
 * Concurrency contract: every transition is one Lua script, atomic in Redis.
 * Each script first brings the queue up to the caller's `now` — expired leases
 * become failed attempts at their leaseUntil, delayed jobs due become ready —
 * so no sweeper can race a completion, and a complete that arrives after its
 * leaseUntil is refused even if no other call ran in between. A poll writes a
 * fresh token (an INCR, never repeated); complete / fail / extend check it.
 *
 * Failures: a call made while the connection is down rejects at once with
 * BackendUnavailableError and changed nothing. A call in flight when the
 * connection breaks rejects with BackendUnavailableError too, and is never
 * sent again: it ran once or not at all. A lost poll reply leaves a lease no
 * one holds, which expires like any other, so no job is leased twice.
 *
 * Durability is Redis's: acknowledged calls survive a crash or restart of
 * Redis only with `appendonly yes`; `appendfsync always` makes every
 * acknowledged call durable before its reply, `everysec` may lose up to the
 * last second of them on a crash of Redis or of its machine.
 */
export class RedisJobQueue {
  readonly #redis: Redis;
  readonly #handle: RedisQueueHandle;
  readonly #where: string;
  readonly #keys: QueueKeys;
  readonly #time: TimeSource;
  readonly #policy: RetryPolicy;
  readonly #capacity: number;
  readonly #maxPayloadBytes: number;
  readonly #maxErrorBytes: number;
  #closed = false;
  /** The new-work counter as the latest poll saw it (see waitForWork). */
  #signalSeen = 0;
  #listener: Promise<Redis> | undefined;
  readonly #waiters = new Set<Waiter>();

  private constructor(redis: Redis, options: Required<RedisQueueOptions>) {
    this.#redis = redis;
    const { capacity, maxPayloadBytes, maxErrorBytes, commandTimeoutMillis } = options;
    this.#handle = {
      kind: 'leasehold/redis-queue',
      redis: options.redis,
      name: options.name,
      policy: sharePolicy(options.policy),
      options: { capacity, maxPayloadBytes, maxErrorBytes, commandTimeoutMillis },
      clock: shareClock(options.time),
    };
    this.#where = addressOf(redis);
    this.#keys = queueKeys(options.name);
    this.#time = options.time;
    this.#policy = options.policy;
    this.#capacity = options.capacity;
    this.#maxPayloadBytes = options.maxPayloadBytes;
    this.#maxErrorBytes = options.maxErrorBytes;
  }

  /** Connects to Redis and opens the queue `name` there (created by its first submit). */
  static async connect(options: RedisQueueOptions): Promise<RedisJobQueue> {
    if (options === null || typeof options !== 'object') {
      throw new InvalidArgumentError(`Expected \`options\` to be an object, got ${describe(options)}`);
    }
    const { redis: target, name, policy, time = systemClock, commandTimeoutMillis = DEFAULT_COMMAND_TIMEOUT_MILLIS } = options;
    if (typeof target !== 'string' && (target === null || typeof target !== 'object')) {
      throw new InvalidArgumentError(`Expected \`redis\` to be a URL or ioredis options, got ${describe(target)}`);
    }
    checkQueueName(name);
    checkPolicy(policy);
    checkTimeSource(time);
    if (!Number.isInteger(commandTimeoutMillis) || !(commandTimeoutMillis >= 1)) {
      throw new InvalidArgumentError(`Expected \`commandTimeoutMillis\` to be an integer >= 1, got ${describe(commandTimeoutMillis)}`);
    }
    const { capacity, maxPayloadBytes, maxErrorBytes } = fillOptions({
      capacity: options.capacity, maxPayloadBytes: options.maxPayloadBytes, maxErrorBytes: options.maxErrorBytes,
    });
    const redis = await createClient(target, commandTimeoutMillis);
    try {
      await redis.connect();
    } catch (error) {
      redis.disconnect();
      throw connectError(error, addressOf(redis));
    }
    return new RedisJobQueue(redis, { redis: target, name, policy, time, capacity, maxPayloadBytes, maxErrorBytes, commandTimeoutMillis });
  }

  /**
   * A handle to post to other threads (or, with systemClock, to send to other
   * processes); `RedisJobQueue.attach(handle)` there connects to this same
   * queue with the same options. The Redis target must be a URL or ioredis
   * options without functions.
   */
  share(): RedisQueueHandle {
    this.#assertOpen();
    try {
      structuredClone(this.#handle.redis);
    } catch {
      throw new IllegalStateError('This queue was connected with ioredis options that cannot be copied (functions?): connect with a URL or plain options to share it');
    }
    return this.#handle;
  }

  /** Connects, in this thread or process, to the queue a `share()` handle names. Without `time`, the handle's clock. */
  static attach(handle: RedisQueueHandle, time?: TimeSource): Promise<RedisJobQueue> {
    try {
      if (handle === null || typeof handle !== 'object' || handle.kind !== 'leasehold/redis-queue' ||
          handle.policy === null || typeof handle.policy !== 'object' || handle.options === null || typeof handle.options !== 'object') {
        throw new InvalidArgumentError(`Expected a handle from RedisJobQueue#share(), got ${describe(handle)}`);
      }
      const { redis, name, options } = handle;
      return RedisJobQueue.connect({ ...options, redis, name, policy: policyFromShare(handle.policy), time: time ?? clockFromShare(handle.clock) });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Queues a new PENDING job and returns its id, `J1`, `J2`, ..., once Redis has it. */
  async submit(type: string, payload?: string | null, priority = 0, runAtMillis?: number): Promise<string> {
    this.#assertOpen();
    const [id] = await this.#submit([checkJob(type, payload, priority, runAtMillis, this.#maxPayloadBytes)]);
    return id!;
  }

  /** Queues several jobs at once, all or none, in one script. Returns their ids in order. */
  async submitMany(jobs: readonly NewJob[]): Promise<string[]> {
    this.#assertOpen();
    const checked = checkJobs(jobs, this.#maxPayloadBytes);
    return checked.length === 0 ? [] : this.#submit(checked);
  }

  async #submit(jobs: readonly CheckedJob[]): Promise<string[]> {
    const fields = jobs.flatMap((job) => [job.type, job.payload, String(job.priority), job.runAtMillis === undefined ? '' : String(job.runAtMillis)]);
    const reply = await this.#run(SCRIPTS.submit, [String(this.#capacity), ...fields], '');
    return reply.slice(1).map((n) => `J${n}`);
  }

  /** Leases the best ready job to `workerId` until now + leaseMillis, or resolves undefined if none is ready. */
  async poll(workerId: string, leaseMillis: number): Promise<Lease | undefined> {
    this.#assertOpen();
    checkWorkerId(workerId);
    checkLeaseMillis(leaseMillis);
    return this.#leaseFrom(await this.#run(SCRIPTS.poll, [workerId, String(leaseMillis)], ''));
  }

  /** Marks the job SUCCEEDED; `token` must be its current, valid lease. */
  async complete(jobId: string, token: number): Promise<void> {
    this.#assertOpen();
    await this.#run(SCRIPTS.complete, [jobNumber(jobId), tokenText(token)], jobId);
  }

  /**
   * A worker loop's step in one round trip: `complete(jobId, token)`, then
   * `poll(workerId, leaseMillis)`. If the complete is refused, nothing is polled.
   */
  async completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number): Promise<Lease | undefined> {
    this.#assertOpen();
    checkWorkerId(workerId);
    checkLeaseMillis(leaseMillis);
    const reply = await this.#run(SCRIPTS.completeAndPoll, [jobNumber(jobId), tokenText(token), workerId, String(leaseMillis)], jobId);
    return this.#leaseFrom(reply);
  }

  /** The lease in a poll's reply, if any; notes the wake counter the poll saw. */
  #leaseFrom([, signal, n, token, type, payload, attempt, leaseUntil]: unknown[]): Lease | undefined {
    // What was new work when this poll ran; anything newer wakes waitForWork.
    this.#signalSeen = Number(signal);
    if (n === undefined) return undefined;
    return {
      jobId: `J${n}`, token: Number(token), type: String(type), payload: String(payload), attempt: Number(attempt), leaseUntil: Number(leaseUntil),
    };
  }

  /**
   * Records a failed attempt: the job retries after its backoff, or is
   * dead-lettered when no attempts are left — or at once with `{ permanent: true }`.
   */
  async fail(jobId: string, token: number, error?: string | null, options?: FailOptions): Promise<void> {
    this.#assertOpen();
    const { text, permanent } = checkFailure(error, options, this.#maxErrorBytes);
    await this.#run(SCRIPTS.fail, [jobNumber(jobId), tokenText(token), text ?? 'failed', permanent ? '1' : '0'], jobId);
  }

  /**
   * Hands a lease back unfinished, for a worker that stops before its job
   * ends (a shutdown, not a failure): PENDING, ready now, the interrupted
   * attempt not counted, lastError kept; `token` is refused from then on.
   */
  async release(jobId: string, token: number): Promise<void> {
    this.#assertOpen();
    await this.#run(SCRIPTS.release, [jobNumber(jobId), tokenText(token)], jobId);
  }

  /** Heartbeat: the lease now lasts until now + leaseMillis. Resolves to the new leaseUntil. */
  async extend(jobId: string, token: number, leaseMillis: number): Promise<number> {
    this.#assertOpen();
    checkLeaseMillis(leaseMillis);
    const [, leaseUntil] = await this.#run(SCRIPTS.extend, [jobNumber(jobId), tokenText(token), String(leaseMillis)], jobId);
    return Number(leaseUntil);
  }

  async view(jobId: string): Promise<JobView> {
    this.#assertOpen();
    const [, fields] = await this.#run(SCRIPTS.view, [jobNumber(jobId)], jobId);
    return toView(jobId, fields as string[]);
  }

  /** Every DEAD job, in submission order. */
  async deadLetters(): Promise<JobView[]> {
    this.#assertOpen();
    const reply = await this.#run(SCRIPTS.deadLetters, [], '');
    const views: JobView[] = [];
    for (let i = 1; i < reply.length; i += 2) views.push(toView(`J${reply[i]}`, reply[i + 1] as string[]));
    return views;
  }

  /** Puts a DEAD job back to PENDING, ready now, with attempts reset to 0 (lastError kept). */
  async retryDead(jobId: string): Promise<void> {
    this.#assertOpen();
    await this.#run(SCRIPTS.retryDead, [jobNumber(jobId)], jobId);
  }

  /** Cancels a PENDING job. */
  async cancel(jobId: string): Promise<void> {
    this.#assertOpen();
    await this.#run(SCRIPTS.cancel, [jobNumber(jobId)], jobId);
  }

  /** PENDING jobs, ready or delayed. */
  async queueDepth(): Promise<number> {
    return (await this.stats()).pending;
  }

  /** DEAD jobs. */
  async dlqDepth(): Promise<number> {
    return (await this.stats()).dead;
  }

  /** Exact counts, each an O(1) read of an index or counter. */
  async stats(): Promise<QueueStats> {
    this.#assertOpen();
    const [, pending, ready, running, succeeded, dead, cancelled] = (await this.#run(SCRIPTS.stats, [], '')).map(Number) as number[];
    return { pending: pending!, ready: ready!, delayed: pending! - ready!, running: running!, succeeded: succeeded!, dead: dead!, cancelled: cancelled! };
  }

  /**
   * For worker loops: after a `poll` that returned nothing, waits until work
   * may have arrived (a submit, a retry, a failed attempt by any client since
   * that poll ran) or `timeoutMillis` pass. Resolves true if woken by new
   * work. Jobs that become ready by the clock alone (a delayed runAt, a
   * backoff, an expired lease) wake no one: cap the timeout. The first call
   * opens a second connection, subscribed to the queue's channel.
   */
  async waitForWork(timeoutMillis: number): Promise<boolean> {
    this.#assertOpen();
    checkTimeout(timeoutMillis);
    const seen = this.#signalSeen;
    await this.#listen();
    // Read only once subscribed: work announced after this read arrives as a message.
    const current = Number(await this.#send(() => this.#redis.get(this.#keys.named.signal)));
    if (current > seen) return true;
    if (this.#closed) return false;
    return new Promise((resolve) => {
      const waiter: Waiter = {
        seen,
        wake: (woken) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(woken);
        },
      };
      const timer = setTimeout(() => waiter.wake(false), timeoutMillis);
      this.#waiters.add(waiter);
    });
  }

  /** Closes this client's connections; the queue stays in Redis for every other client. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const waiter of this.#waiters) waiter.wake(false);
    const listener = this.#listener?.catch(() => undefined);
    await Promise.all([release(this.#redis), listener?.then((client) => client && release(client))]);
  }

  // ── plumbing ───────────────────────────────────────────────────────────

  /** The subscribed connection that wakes waitForWork, opened on first use. */
  #listen(): Promise<Redis> {
    this.#listener ??= (async () => {
      const client = duplicateClient(this.#redis);
      client.on('message', (_channel: string, message: string) => {
        const signal = Number(message);
        for (const waiter of this.#waiters) if (signal > waiter.seen) waiter.wake(true);
      });
      try {
        await client.connect();
        await client.subscribe(this.#keys.named.signal);
        return client;
      } catch (error) {
        client.disconnect();
        throw connectError(error, this.#where);
      }
    })();
    // A failed subscription is retried by the next waitForWork.
    this.#listener.catch(() => (this.#listener = undefined));
    return this.#listener;
  }

  /**
   * Runs `script` with the common arguments (now, a jitter seed, the policy)
   * and `own`; a refusal becomes its error, about `jobId`.
   */
  async #run(script: Script, own: readonly string[], jobId: string): Promise<unknown[]> {
    const now = checkNow(this.#time.now());
    const policy = this.#policy;
    const common: Record<(typeof COMMON_ARGS)[number], string> = {
      jobPrefix: this.#keys.jobPrefix,
      now: String(now),
      seed: String(Math.floor(Math.random() * 2 ** 31)),
      maxAttempts: String(policy.maxAttempts),
      baseBackoffMillis: String(policy.baseBackoffMillis),
      maxBackoffMillis: String(policy.maxBackoffMillis),
      jitter: policy.jitter,
    };
    const args = [...COMMON_ARGS.map((name) => common[name]), ...own];
    const { keys } = this.#keys;
    const reply = (await this.#send(async () => {
      try {
        return await this.#redis.evalsha(script.sha, keys.length, ...keys, ...args);
      } catch (error) {
        // Redis lost its script cache (a restart): NOSCRIPT means the script did not run.
        if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
        return await this.#redis.eval(script.lua, keys.length, ...keys, ...args);
      }
    })) as unknown[];
    const code = reply[0] as number;
    if (code < 0) throw refusalError(code, jobId, this.#capacity);
    return reply;
  }

  /** Sends a command if connected; a failure of the connection becomes BackendUnavailableError. */
  async #send<T>(command: () => Promise<T>): Promise<T> {
    if (this.#redis.status !== 'ready') throw notConnectedError(this.#redis, this.#where);
    try {
      return await command();
    } catch (error) {
      throw backendError(error, this.#where);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new IllegalStateError('This queue was closed');
  }
}

interface Waiter {
  /** The new-work counter its poll saw. */
  readonly seen: number;
  wake(woken: boolean): void;
}

/** The job number of `jobId` as the scripts take it. */
function jobNumber(jobId: string): string {
  return String(parseJobId(jobId));
}

/** A token as the scripts compare it: only a safe integer can be one. */
function tokenText(token: unknown): string {
  return typeof token === 'number' && Number.isSafeInteger(token) ? String(token) : '';
}

function toView(id: string, pairs: readonly string[]): JobView {
  const f = new Map<string, string>();
  for (let i = 0; i < pairs.length; i += 2) f.set(pairs[i]!, pairs[i + 1]!);
  const status = f.get('status') as JobStatus;
  return {
    id,
    type: f.get('type')!,
    priority: Number(f.get('priority')),
    status,
    attempts: Number(f.get('attempts')),
    nextRunAt: Number(f.get('runAt')),
    lastError: f.get('lastError') ?? null,
    payload: f.get('payload')!,
    leaseUntil: status === JobStatus.RUNNING ? Number(f.get('leaseUntil')) : null,
    workerId: f.get('workerId') ?? null,
  };
}
