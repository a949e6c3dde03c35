import { clockFromShare, shareClock, systemClock, type SharedClock, type TimeSource } from '../clock.js';
import { IllegalStateError, InvalidArgumentError, describe, refusalError, type JobQueueError } from '../errors.js';
import { fillOptions, filledTracing, readCallers, readOptions, type JobQueueOptions, type RetainOptions, type TracingOptions } from '../options.js';
import { RetryPolicy, policyFromShare, sharePolicy, type Jitter, type SharedPolicy } from '../policy.js';
import { byGroup, byType, type ConcurrencyCaps, type GroupConcurrencyCap, type JobPage, type JobQuery, type JobView, type Lease, type Payload, type QueueStats, type RateLimit, type TypeRateLimit, type TypeRetryPolicy } from '../types.js';
import { checkConcurrency, checkGroupConcurrency } from '../validate/concurrency.js';
import { readNow, checkTimeSource } from '../validate/clock.js';
import { PlainReservations } from '../validate/reserved-bytes.js';
import { checkPolicy, checkQueueName } from '../validate/construction.js';
import { parseJobId } from '../validate/job-id.js';
import { checkJobs, checkPriority, checkSubmit, type CheckedJob, type NewJob, type SubmitOptions } from '../validate/job-input.js';
import { checkLeaseMillis, checkWorkerId, MAX_BATCH } from '../validate/lease.js';
import { checkProgress } from '../validate/progress.js';
import { checkLogLine, cutLine, type LogLimits } from '../validate/logs.js';
import type { FlowJob, JobLogs } from '../types.js';
import { checkFlow } from '../validate/flow-input.js';
import { checkIntegerIn } from '../validate/numbers.js';
import { checkFailure, storedResult, type FailError, type FailOptions } from '../validate/outcome.js';
import { checkJobQuery, cursorAfter } from '../validate/query.js';
import { checkDelay, checkPayload, checkReleaseOptions, type ReleaseOptions } from '../validate/pending-edits.js';
import { checkRateLimit } from '../validate/rate-limit.js';
import { checkRetryPolicy } from '../validate/retry-policy.js';
import { checkSchedule, checkScheduleName, checkSchedulerOptions } from '../validate/schedule.js';
import { checkTimeout, type FinishedOptions } from '../validate/waits.js';
import {
  addressOf, backendError, checkTarget, connectClient, createClient, notConnectedError, release, userOf, type RedisClient, type RedisClusterTarget, type RedisServerTarget, type RedisTarget,
} from './connection.js';
import { jobKey, queueKeys, scheduleKeys, type QueueKeys } from './keys.js';
import { RedisSchedules } from './schedules.js';
import { viewOf, type ScheduleOptions, type ScheduleView } from '../schedule/spec.js';
import { startScheduler, type Scheduler, type SchedulerOptions } from '../schedule/timer.js';
import { childResultsIn, leasesIn, numberOf, textOf, toView } from './replies.js';
import { HOLDER, Liveness } from './liveness.js';
import { WakeUps } from './wake.js';
import { FinishNotices } from './finishes.js';
import { CancelNotices } from './cancels.js';
import { RedisEventReader } from './events.js';
import { QueueEvents, checkEventsOptions, type EventSink, type QueueEventsOptions } from '../events/queue-events.js';
import { Subscriber } from './subscriber.js';
import { untilFinished } from '../finished.js';
import { ProducerTracing } from '../tracing/producer.js';
import { CommandRunner } from './commands.js';
import { CATCHING_UP, COMMON_ARGS, DEAD_LETTERS_PAGE, SETTINGS, type Command, type Script } from './scripts.js';

export type { RedisClusterTarget, RedisServerTarget, RedisTarget };

export interface RedisQueueOptions extends Pick<JobQueueOptions, 'capacity' | 'maxPayloadBytes' | 'maxErrorBytes' | 'maxResultBytes' | 'maxLogLines' | 'maxLogLineBytes' | 'retain'> {
  /**
   * The Redis server: a URL (`redis://host:6379/0`, `redis://user:password@host`,
   * `rediss://host` for TLS), ioredis options, or a Redis Cluster
   * (`{ cluster: [{ host, port }, ...], options? }`).
   */
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
  /**
   * How many replicas must have every write before its call resolves: each
   * call that changes the queue is followed by Redis's `WAIT replicas
   * replicaTimeoutMillis` in the same round trip, so that a job whose submit
   * resolved, a lease a poll returned and a complete that resolved survive a
   * failover to a replica (Sentinel or Cluster). With 0, replication is
   * asynchronous and a failover may lose the last acknowledged writes (docs/redis.md).
   * @default 0
   */
  replicas?: number;
  /**
   * How long a write waits for `replicas` replicas; if fewer have it by then, the call rejects
   * with BackendUnavailableError (it ran on the master: a failover may lose it).
   * @default 1000
   */
  replicaTimeoutMillis?: number;
  /**
   * Trace this queue's jobs with OpenTelemetry, as JobQueue's `tracing` does (create spans
   * at submit, process spans in a WorkerPool; docs/tracing.md), named by default after the queue's `name`.
   * @default false
   */
  tracing?: boolean | TracingOptions;
}

/** The keys of RedisQueueOptions: `connect` refuses any other. */
export const REDIS_QUEUE_OPTIONS: ReadonlySet<string> = new Set([
  'redis', 'name', 'policy', 'time', 'commandTimeoutMillis', 'tracing', 'capacity', 'maxPayloadBytes', 'maxErrorBytes', 'maxResultBytes', 'maxLogLines', 'maxLogLineBytes',
  'replicas', 'replicaTimeoutMillis', 'retain',
]);

const DEFAULT_COMMAND_TIMEOUT_MILLIS = 10_000;
const DEFAULT_REPLICA_TIMEOUT_MILLIS = 1_000;

/**
 * Which partition of a partitioned queue (PartitionedRedisQueue) a
 * RedisJobQueue is: its job numbers are index + 1, then every `of`-th, so
 * that the partitions' ids never collide. A queue on its own is { 0, 1 }.
 */
export interface Partition {
  readonly index: number;
  readonly of: number;
}

const WHOLE: Partition = { index: 0, of: 1 };

/** A lease to complete in a batch: the job, the token its lease carries, and the job's result (none if undefined). */
export interface Completion {
  readonly jobId: string;
  readonly token: number;
  readonly result?: unknown;
}

/** What a completeManyAndPoll did: the completes refused (every other one succeeded), and the new leases. */
export interface BatchOutcome {
  /** Each refused complete, with the error `complete` would have rejected with (StaleLeaseError, JobNotFoundError, InvalidArgumentError for a result). */
  readonly refused: ReadonlyArray<{ readonly jobId: string; readonly error: JobQueueError }>;
  readonly leases: Lease[];
}

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
  readonly options: Required<Pick<RedisQueueOptions, 'capacity' | 'maxPayloadBytes' | 'maxErrorBytes' | 'maxResultBytes' | 'maxLogLines' | 'maxLogLineBytes' | 'commandTimeoutMillis' | 'replicas' | 'replicaTimeoutMillis' | 'retain'>> & {
    /** false, or the queue's name in its spans. */
    readonly tracing: false | Required<TracingOptions>;
  };
  /** The ManualClock's word, or 'system' for systemClock, or null for a clock that cannot cross threads. */
  readonly clock: SharedClock;
  readonly partition: Partition;
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
  readonly #redis: RedisClient;
  /** Runs the queue's commands (FCALL of the library, or EVALSHA) on #redis. */
  readonly #commands: CommandRunner;
  readonly #handle: RedisQueueHandle;
  readonly #where: string;
  readonly #keys: QueueKeys;
  readonly #time: TimeSource;
  readonly #policy: RetryPolicy;
  readonly #capacity: number;
  readonly #maxPayloadBytes: number;
  /** What `reserveBytes` handed out (see PlainReservations). */
  readonly #reservations = new PlainReservations();
  readonly #maxErrorBytes: number;
  readonly #maxResultBytes: number;
  readonly #logLimits: LogLimits;
  /** The create spans of a traced queue's submits; undefined when it is not traced. */
  readonly #tracing: ProducerTracing | undefined;
  /** The `retain` option: finished jobs beyond it are evicted by the scripts. */
  readonly #retain: RetainOptions;
  /** The common `settings` argument, made at the first call (see #settingsText). */
  #settings: string | undefined;
  #closed = false;
  /** The completeAndPoll calls made in this tick, sent together at its end (see #merge); undefined when none is waiting for the tick. */
  #merging: MergedCall[] | undefined;
  /** The new-work counter as the latest poll saw it (see waitForWork). */
  #signalSeen = 0;
  /** When, by the latest poll, the first job held for its type's rate limit may run (Infinity: none held; -Infinity: poll again now). */
  #windowOpensAt = Infinity;
  /** The second connection, subscribed to the queue's channels: new work (wakeUps) and finished jobs (finishes). */
  readonly #subscriber: Subscriber;
  readonly #wakeUps: WakeUps;
  readonly #finishes: FinishNotices;
  /** Cancels of RUNNING jobs, for worker loops (see watchCancels). */
  readonly #cancels: CancelNotices;
  /** This process's liveness key, kept alive from this client's first poll (or share) on. */
  readonly #liveness: Liveness;

  readonly #partition: Partition;
  /** The event subscriptions open on this client: closed with it. */
  readonly #subscriptions = new Set<QueueEvents>();
  /** The queue's schedules, made on first use: a client that never schedules pays nothing. */
  #schedules: RedisSchedules | undefined;

  private constructor(redis: RedisClient, options: Required<RedisQueueOptions> & RedisQueueHandle['options'], partition: Partition) {
    this.#partition = partition;
    this.#redis = redis;
    const { capacity, maxPayloadBytes, maxErrorBytes, maxResultBytes, maxLogLines, maxLogLineBytes, commandTimeoutMillis, replicas, replicaTimeoutMillis, retain, tracing } = options;
    this.#commands = new CommandRunner(redis, { replicas, timeoutMillis: replicaTimeoutMillis });
    this.#handle = {
      kind: 'leasehold/redis-queue',
      redis: options.redis,
      name: options.name,
      policy: sharePolicy(options.policy),
      options: { capacity, maxPayloadBytes, maxErrorBytes, maxResultBytes, maxLogLines, maxLogLineBytes, commandTimeoutMillis, replicas, replicaTimeoutMillis, retain, tracing },
      clock: shareClock(options.time),
      partition,
    };
    this.#where = addressOf(redis, options.redis);
    this.#keys = queueKeys(options.name);
    this.#subscriber = new Subscriber(redis, this.#where);
    this.#wakeUps = new WakeUps(this.#subscriber, this.#keys.named.signal);
    this.#finishes = new FinishNotices(this.#subscriber, this.#keys.named.finishes);
    this.#cancels = new CancelNotices(this.#subscriber, this.#keys.named.cancels);
    this.#liveness = new Liveness(redis, this.#keys.alivePrefix);
    this.#time = options.time;
    this.#policy = options.policy;
    this.#capacity = options.capacity;
    this.#maxPayloadBytes = options.maxPayloadBytes;
    this.#maxErrorBytes = options.maxErrorBytes;
    this.#maxResultBytes = maxResultBytes;
    this.#logLimits = { maxLogLines, maxLogLineBytes };
    this.#tracing = tracing === false ? undefined : new ProducerTracing(tracing.name);
    this.#retain = retain;
  }

  /**
   * Connects to Redis and opens the queue `name` there (created by its first
   * submit). (`partition` is PartitionedRedisQueue's: leave it out.)
   */
  static async connect(asked: RedisQueueOptions, partition: Partition = WHOLE): Promise<RedisJobQueue> {
    const options = readOptions<RedisQueueOptions>('options', asked, REDIS_QUEUE_OPTIONS);
    const {
      redis: target, name, policy, time = systemClock, commandTimeoutMillis = DEFAULT_COMMAND_TIMEOUT_MILLIS, replicas = 0,
      replicaTimeoutMillis = DEFAULT_REPLICA_TIMEOUT_MILLIS,
    } = options;
    checkTarget(target);
    checkQueueName(name);
    checkPolicy(policy);
    checkTimeSource(time);
    if (!Number.isInteger(commandTimeoutMillis) || !(commandTimeoutMillis >= 1)) {
      throw new InvalidArgumentError(`Expected \`commandTimeoutMillis\` to be an integer >= 1, got ${describe(commandTimeoutMillis)}`);
    }
    if (!Number.isInteger(replicas) || !(replicas >= 0)) {
      throw new InvalidArgumentError(`Expected \`replicas\` to be an integer >= 0, got ${describe(replicas)}`);
    }
    if (!Number.isInteger(replicaTimeoutMillis) || !(replicaTimeoutMillis >= 1)) {
      throw new InvalidArgumentError(`Expected \`replicaTimeoutMillis\` to be an integer >= 1, got ${describe(replicaTimeoutMillis)}`);
    }
    const tracing = filledTracing(options.tracing, name);
    const { capacity, maxPayloadBytes, maxErrorBytes, maxResultBytes, maxLogLines, maxLogLineBytes, retain } = fillOptions({
      capacity: options.capacity, maxPayloadBytes: options.maxPayloadBytes, maxErrorBytes: options.maxErrorBytes, maxResultBytes: options.maxResultBytes,
      maxLogLines: options.maxLogLines, maxLogLineBytes: options.maxLogLineBytes, retain: options.retain,
    });
    const redis = await createClient(target, commandTimeoutMillis);
    await connectClient(redis, addressOf(redis, target), userOf(redis));
    return new RedisJobQueue(
      redis, {
        redis: target, name, policy, time, capacity, maxPayloadBytes, maxErrorBytes, maxResultBytes, maxLogLines, maxLogLineBytes, commandTimeoutMillis,
        replicas, replicaTimeoutMillis, retain, tracing,
      }, partition,
    );
  }

  /**
   * A handle to post to other threads (or, with systemClock, to send to other
   * processes); `RedisJobQueue.attach(handle)` there connects to this same
   * queue with the same options. The Redis target must be a URL or ioredis
   * options without functions.
   */
  share(): RedisQueueHandle {
    this.#assertOpen();
    // A shared queue is a pool's (or another process's) own: this thread keeps the process's liveness key alive too,
    // so that a process whose worker threads all hang is not taken for dead.
    this.#liveness.start();
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
      const { redis, name, options, partition = WHOLE } = handle;
      return RedisJobQueue.connect({ ...options, redis, name, policy: policyFromShare(handle.policy), time: time ?? clockFromShare(handle.clock) }, partition);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * As JobQueue#reserveBytes, with nothing to reserve: Redis keeps no
   * shared memory in this process, so this is a new Uint8Array of
   * `byteLength` bytes, which a submit sends as it sends any other.
   */
  reserveBytes(byteLength: number): Uint8Array {
    this.#assertOpen();
    return this.#reservations.reserve(byteLength, this.#maxPayloadBytes);
  }

  /** As JobQueue#releaseBytes: nothing to give back, but bytes this instance's `reserveBytes` did not hand out are refused alike. */
  releaseBytes(bytes: Uint8Array): void {
    this.#assertOpen();
    this.#reservations.release(bytes);
  }

  /**
   * Queues a new PENDING job and resolves to its id, `J1`, `J2`, ..., once Redis has it (or, for a `key`
   * that is taken, the id of the job that holds it: see JobQueue#submit). The options form
   * (`{ priority, runAt, delayMillis, maxAttempts, key, keyTtlMillis, debounceMillis, throttleMillis, timeoutMillis, headers }`) or the positional one (`priority, runAtMillis`).
   */
  submit(type: string, payload?: Payload | null, options?: SubmitOptions): Promise<string>;
  submit(type: string, payload?: Payload | null, priority?: number, runAtMillis?: number): Promise<string>;
  /** Either form, as a caller that forwards its own arguments has them (PartitionedRedisQueue). */
  submit(type: string, payload?: Payload | null, priorityOrOptions?: number | SubmitOptions, runAtMillis?: number): Promise<string>;
  async submit(type: string, payload?: Payload | null, priorityOrOptions: number | SubmitOptions = 0, runAtMillis?: number): Promise<string> {
    this.#assertOpen();
    const [id] = await this.#submit([checkSubmit(type, payload, priorityOrOptions, runAtMillis, this.#maxPayloadBytes)]);
    return id!;
  }

  /**
   * Submits a flow (see JobQueue#submitFlow), all or none, in one script: the root first, each parent
   * before its children; resolves to their ids in that order. A parent waits, PENDING, until each of its
   * children has ended (includes/flows.lua); the first flow moves the queue's data model up (FLOW_MODEL).
   */
  async submitFlow(flow: FlowJob): Promise<string[]> {
    this.#assertOpen();
    const jobs = checkFlow(flow, this.#maxPayloadBytes);
    const fields = jobs.flatMap(({ job, parent, children, ignoresChildFailure }): Array<string | Buffer> => [
      job.type, payloadArg(job.payload), String(job.priority), job.runAtMillis === undefined ? '' : String(job.runAtMillis),
      String(job.delayMillis), String(job.maxAttempts), String(job.timeoutMillis), job.headersText ?? '', job.group ?? '',
      String(parent + 1), String(children), ignoresChildFailure ? '1' : '0',
    ]);
    const reply = await this.#run('submitFlow', [String(this.#capacity), ...fields, ...binaryMarks(jobs.map(({ job }) => job.payload))], '');
    return reply.slice(1).map((n) => `J${n}`);
  }

  /**
   * The results of the direct children of `parentId` that SUCCEEDED and are still held, by child id
   * (a child that completed without a result maps to undefined); a child evicted or removed is missing.
   */
  async childResults(parentId: string): Promise<Record<string, unknown>> {
    this.#assertOpen();
    return childResultsIn(await this.#runOnJob('childResults', parentId, [], true));
  }

  /** Queues several jobs at once, all or none, in one script. Returns their ids in order (keys as JobQueue#submitMany). */
  async submitMany(jobs: readonly NewJob[]): Promise<string[]> {
    this.#assertOpen();
    const checked = checkJobs(jobs, this.#maxPayloadBytes);
    return checked.length === 0 ? [] : this.#submit(checked);
  }

  #submit(jobs: readonly CheckedJob[]): Promise<string[]> {
    return this.#tracing === undefined ? this.#place(jobs) : this.#tracing.traced(jobs, () => this.#place(jobs));
  }

  /**
   * Runs the submit script for `jobs`; their ids. A batch of plain jobs (type, payload and priority, every
   * other field at its default) sends those three per job, not all 13 (submit.lua's width): about a
   * quarter of the arguments for the client to write and Redis to read.
   */
  async #place(jobs: readonly CheckedJob[]): Promise<string[]> {
    const width = jobs.every(isPlain) ? PLAIN_WIDTH : FULL_WIDTH;
    const own: Array<string | Buffer> = [String(this.#capacity), String(width)];
    for (const job of jobs) {
      own.push(job.type, payloadArg(job.payload), String(job.priority));
      if (width === FULL_WIDTH) {
        own.push(job.runAtMillis === undefined ? '' : String(job.runAtMillis), String(job.delayMillis), String(job.maxAttempts), job.key ?? '',
          String(job.keyTtlMillis), String(job.timeoutMillis), job.headersText ?? '', String(job.debounceMillis), String(job.throttleMillis), job.group ?? '');
      }
    }
    const reply = await this.#run('submit', [...own, ...binaryMarks(jobs.map((job) => job.payload))], '');
    return reply.slice(1).map((n) => `J${n}`);
  }

  /** Leases the best ready job to `workerId` until now + leaseMillis, or resolves undefined if none is ready. */
  async poll(workerId: string, leaseMillis: number): Promise<Lease | undefined> {
    this.#assertOpen();
    checkWorkerId(workerId);
    checkLeaseMillis(leaseMillis);
    return this.#leasesFrom(await this.#run('poll', [workerId, String(leaseMillis), '1'], '', [], true), 1)[0];
  }

  /**
   * Leases up to `max` ready jobs to `workerId`, best first, in one script:
   * each as `poll` would lease it (its own token, its attempt counted).
   * Resolves to the leases, none if no job is ready.
   */
  async pollMany(workerId: string, leaseMillis: number, max: number): Promise<Lease[]> {
    this.#assertOpen();
    checkWorkerId(workerId);
    checkLeaseMillis(leaseMillis);
    checkIntegerIn('max', max, 1, MAX_BATCH);
    return this.#leasesFrom(await this.#run('poll', [workerId, String(leaseMillis), String(max)], '', [], true), 1);
  }

  /**
   * Marks the job SUCCEEDED; `token` must be its current, valid lease.
   * `result` (JSON-serializable, at most `maxResultBytes` of JSON, or a
   * Uint8Array of at most `maxPayloadBytes`, kept as raw bytes) is stored
   * in the job's hash; a refused one rejects InvalidArgumentError and
   * changes nothing (see JobQueue#complete).
   */
  async complete(jobId: string, token: number, result?: unknown): Promise<void> {
    this.#assertOpen();
    await this.#runOnJob('complete', jobId, [tokenText(token), this.#resultArg(result)]);
  }

  /**
   * A worker loop's step in one round trip: `complete(jobId, token, result)`, then
   * `poll(workerId, leaseMillis)`. If the complete is refused, nothing is polled.
   */
  async completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number, result?: unknown): Promise<Lease | undefined> {
    this.#assertOpen();
    checkWorkerId(workerId);
    checkLeaseMillis(leaseMillis);
    const n = jobNumber(jobId);
    const complete: [string, string | Buffer] = [tokenText(token), this.#resultArg(result)];
    const lease = await new Promise<Lease | undefined>((resolve, reject) => this.#merge({ jobId, n, complete, workerId, leaseMillis: String(leaseMillis), resolve, reject }));
    // The complete is done: a poll of its own looks past the limited jobs this script had no budget left for.
    return lease === undefined && this.#windowOpensAt === -Infinity ? this.poll(workerId, leaseMillis) : lease;
  }

  /**
   * Adds a completeAndPoll call to those made in this tick (claim loops whose replies came in one read
   * make theirs in the same tick), sent together once the tick's microtasks have run: a lone call as
   * completeAndPoll, several as one completeAndPollMerged, whose result is theirs run one after another
   * (complete-and-poll-merged.lua). Each still takes effect between its invocation and its response, and
   * gets its own outcome: its lease or none, or its own refusal.
   */
  #merge(call: MergedCall): void {
    if (this.#merging === undefined) {
      this.#merging = [];
      process.nextTick(() => this.#sendMerged());
    }
    this.#merging.push(call);
    if (this.#merging.length === MAX_BATCH) this.#sendMerged();
  }

  /** Sends the completeAndPoll calls merged so far (see #merge), and settles each with its own outcome. */
  #sendMerged(): void {
    const calls = this.#merging;
    this.#merging = undefined;
    if (calls === undefined || calls.length === 0) return;
    if (calls.length === 1) {
      const [{ jobId, complete, workerId, leaseMillis, resolve, reject }] = calls as [MergedCall];
      this.#runOnJob('completeAndPoll', jobId, [...complete, workerId, leaseMillis], true).then((reply) => resolve(this.#leasesFrom(reply, 1)[0]), reject);
      return;
    }
    const own = [String(calls.length), ...calls.flatMap(({ n, complete }) => [n, ...complete]), ...calls.flatMap(({ workerId, leaseMillis }) => [workerId, leaseMillis])];
    this.#run('completeAndPollMerged', own, '', calls.map(({ n }) => jobKey(this.#keys, n)), true).then(
      (reply) => {
        const leases = this.#leasesFrom(reply, 2 + calls.length);
        let next = 0;
        calls.forEach(({ jobId, resolve, reject }, i) => {
          // Its refusal, or how many leases it got (0 or 1), the leases in the calls' order.
          const outcome = numberOf(reply[2 + i]);
          if (outcome < 0) reject(refusalError(outcome, jobId, this.#capacity));
          else resolve(outcome === 1 ? leases[next++] : undefined);
        });
      },
      (error: unknown) => calls.forEach(({ reject }) => reject(error)),
    );
  }

  /**
   * Settles when the job finishes, whichever client or process finishes it
   * (see JobQueue#finished for what it resolves and rejects with). It
   * listens on the queue's `finishes` channel (the subscribed connection
   * waitForWork also uses), then looks at the job, and looks again only when
   * a message names it: no polling.
   */
  async finished(jobId: string, options?: FinishedOptions): Promise<unknown> {
    this.#assertOpen();
    try {
      return await untilFinished(jobId, options, () => this.view(jobId), this.#finishes.watch(jobNumber(jobId)));
    } catch (error) {
      // Closed while waiting (perhaps mid-call, its connection gone): the wait ends as any call on a closed queue.
      if (this.#closed) this.#assertOpen();
      throw error;
    }
  }

  /**
   * A batched worker loop's step in one script: completes every lease in
   * `done`, each checked on its own (a refused one is reported, changes
   * nothing, and does not stop the others; so is a result that `complete`
   * would refuse, with its InvalidArgumentError), then leases up to `max`
   * ready jobs as `pollMany` does (`max` 0: complete only). A malformed job
   * id rejects the whole call, which then changed nothing.
   */
  async completeManyAndPoll(asked: readonly Completion[], workerId: string, leaseMillis: number, max: number): Promise<BatchOutcome> {
    this.#assertOpen();
    // Read once, each completion copied: a hole of a sparse array is then an undefined one, refused below.
    const done = readCallers('done', () => (Array.isArray(asked) && asked.length <= MAX_BATCH ? Array.from(asked, copyOf) : undefined));
    if (done === undefined) {
      throw new InvalidArgumentError(`Expected \`done\` to be an array of at most ${MAX_BATCH} { jobId, token }, got ${describe(asked)}`);
    }
    checkWorkerId(workerId);
    checkLeaseMillis(leaseMillis);
    checkIntegerIn('max', max, 0, MAX_BATCH);
    const numbers = done.map((completion: Completion | null) => {
      if (completion === null || typeof completion !== 'object') {
        throw new InvalidArgumentError(`Expected each of \`done\` to be { jobId, token }, got ${describe(completion)}`);
      }
      return jobNumber(completion.jobId);
    });
    // A result `complete` would refuse is refused here, its complete left out of the script.
    const refused: Array<BatchOutcome['refused'][number]> = [];
    const sent: Array<{ completion: Completion; n: string; text: string | Buffer }> = [];
    done.forEach((completion, i) => {
      try {
        sent.push({ completion, n: numbers[i]!, text: this.#resultArg(completion.result) });
      } catch (error) {
        refused.push({ jobId: completion.jobId, error: error as InvalidArgumentError });
      }
    });
    const own = [workerId, String(leaseMillis), String(max), ...sent.flatMap(({ completion, n, text }) => [n, tokenText(completion.token), text])];
    const reply = await this.#run('completeManyAndPoll', own, '', sent.map(({ n }) => jobKey(this.#keys, n)), true);
    const count = numberOf(reply[1]);
    sent.forEach(({ completion: { jobId } }, i) => {
      const outcome = numberOf(reply[2 + i]);
      if (outcome !== 0) refused.push({ jobId, error: refusalError(outcome, jobId, this.#capacity) });
    });
    const leases = this.#leasesFrom(reply, 2 + count);
    // As in completeAndPoll: the completes are done, a poll of its own looks further.
    if (leases.length === 0 && this.#windowOpensAt === -Infinity) return { refused, leases: await this.pollMany(workerId, leaseMillis, max) };
    return { refused, leases };
  }

  /**
   * A complete's result as the scripts take it: '' for none, the JSON text, or a Uint8Array's bytes after
   * a NUL byte (no JSON text starts with one: includes/leases.lua, completeAll). Refused as storedResult refuses.
   */
  #resultArg(result: unknown): string | Buffer {
    const stored = storedResult(result, this.#maxResultBytes, this.#maxPayloadBytes);
    if (stored === null) return '';
    return typeof stored === 'string' ? stored : Buffer.concat([BINARY_RESULT, stored]);
  }

  /** The leases in a poll's raw reply, whose wake counter is at `at`; notes the counter. */
  #leasesFrom(reply: readonly unknown[], at: number): Lease[] {
    // What was new work when this poll ran; anything newer wakes waitForWork.
    this.#signalSeen = numberOf(reply[at]);
    // 'again': the script passed over as many limited jobs as it may and leased none; there may be more behind them.
    const held = textOf(reply[at + 1]);
    this.#windowOpensAt = held === '' ? Infinity : held === AGAIN ? -Infinity : Number(held);
    // A client that leases keeps its process's liveness key alive (the script set it if it leased).
    this.#liveness.start();
    return leasesIn(reply, at + 2);
  }

  /**
   * Records a failed attempt: the job retries after its backoff, or is
   * dead-lettered when no attempts are left — or at once with `{ permanent: true }`.
   */
  async fail(jobId: string, token: number, error?: FailError, options?: FailOptions): Promise<void> {
    this.#assertOpen();
    const { text, permanent } = checkFailure(error, options, this.#maxErrorBytes);
    await this.#runOnJob('fail', jobId, [tokenText(token), text ?? 'failed', permanent ? '1' : '0']);
  }

  /**
   * Hands a lease back unfinished, for a worker that stops before its job
   * ends (a shutdown, not a failure): PENDING, ready now, the interrupted
   * attempt not counted, lastError kept; `token` is refused from then on.
   * With `{ delayMillis }` (a snooze), ready that long after the release.
   */
  async release(jobId: string, token: number, options?: ReleaseOptions): Promise<void> {
    this.#assertOpen();
    const delayMillis = checkReleaseOptions(options);
    await this.#runOnJob('release', jobId, [tokenText(token), String(delayMillis)]);
  }

  /** Heartbeat: the lease now lasts until now + leaseMillis. Resolves to the new leaseUntil. */
  async extend(jobId: string, token: number, leaseMillis: number): Promise<number> {
    this.#assertOpen();
    checkLeaseMillis(leaseMillis);
    const [, leaseUntil] = await this.#runOnJob('extend', jobId, [tokenText(token), String(leaseMillis)]);
    return Number(leaseUntil);
  }

  /**
   * Reports the progress of a RUNNING job under the lease `token` (see
   * JobQueue#progress): kept in the job's hash with that token, so that
   * a view shows it only until the job's next attempt begins.
   */
  async progress(jobId: string, token: number, value: number): Promise<void> {
    this.#assertOpen();
    checkProgress(value);
    await this.#runOnJob('progress', jobId, [tokenText(token), String(value)]);
  }

  /**
   * Appends `line` to the job's log (see JobQueue#log): a list beside the
   * job's hash, deleted with it; past `maxLogLines` the oldest lines are
   * dropped and counted.
   */
  async log(jobId: string, line: string): Promise<void> {
    this.#assertOpen();
    checkLogLine(line);
    await this.#runOnJob('log', jobId, [cutLine(line, this.#logLimits.maxLogLineBytes), String(this.#logLimits.maxLogLines)]);
  }

  /** The job's log: its lines kept, oldest first, and how many older ones were dropped. */
  async logs(jobId: string): Promise<JobLogs> {
    this.#assertOpen();
    const [, lines, dropped] = await this.#runOnJob('logs', jobId, []);
    return { lines: (lines as unknown[]).map(String), dropped: Number(dropped) };
  }

  async view(jobId: string): Promise<JobView> {
    this.#assertOpen();
    const [, fields] = await this.#runOnJob('view', jobId, [], true);
    return toView(jobId, fields as unknown[], this.#policy.maxAttempts);
  }

  /**
   * Every DEAD job, in submission order, read a page (DEAD_LETTERS_PAGE jobs)
   * per script so that no script runs long however many there are. The pages
   * are not one snapshot: a job dead-lettered or retried while they are read
   * may be missed or seen in its new state; each job's view is exact as of its page.
   */
  async deadLetters(): Promise<JobView[]> {
    this.#assertOpen();
    const views: JobView[] = [];
    for (let after = '0'; ;) {
      const reply = await this.#run('deadLetters', [after], '', [], true);
      for (let i = 1; i < reply.length; i += 2) views.push(toView(`J${textOf(reply[i])}`, reply[i + 1] as unknown[], this.#policy.maxAttempts));
      if (reply.length - 1 < 2 * DEAD_LETTERS_PAGE) return views;
      after = textOf(reply[reply.length - 2]);
    }
  }

  /**
   * A page of jobs in submission order, as JobQueue#jobs: one script, paging
   * the per-status sorted sets by job number (ZRANGEBYSCORE ... LIMIT), so
   * O(log n + page) per status. The page is one snapshot.
   */
  async jobs(query?: JobQuery): Promise<JobPage> {
    this.#assertOpen();
    const { status, type, limit, after } = checkJobQuery(query);
    const own = [status ?? '', String(after), String(limit), type === undefined ? '0' : '1', type ?? ''];
    const reply = await this.#run('jobs', own, '', [], true);
    const jobs: JobView[] = [];
    for (let i = 2; i < reply.length; i += 2) jobs.push(toView(`J${textOf(reply[i])}`, reply[i + 1] as unknown[], this.#policy.maxAttempts));
    const next = textOf(reply[1]);
    return { jobs, next: next === '' ? null : cursorAfter(Number(next)) };
  }

  /** Puts a DEAD job back to PENDING, ready now, with attempts reset to 0 (lastError kept). */
  async retryDead(jobId: string): Promise<void> {
    this.#assertOpen();
    await this.#runOnJob('retryDead', jobId, []);
  }

  /**
   * Cancels a PENDING or RUNNING job (see JobQueue#cancel). A RUNNING job's
   * number goes out on the queue's `cancels` channel, to the worker loops
   * watching it (`watchCancels`) in any process.
   */
  async cancel(jobId: string): Promise<void> {
    this.#assertOpen();
    await this.#runOnJob('cancel', jobId, []);
  }

  /**
   * For worker loops: calls `heard` with the id of each RUNNING job of this
   * queue cancelled, by any client in any process, from the moment the
   * returned promise resolves (subscribed) until the function it resolves to
   * is called; with no id after the subscribed connection came back, when a
   * cancel may have been missed (look at your jobs).
   */
  async watchCancels(heard: (jobId?: string) => void): Promise<() => void> {
    this.#assertOpen();
    return this.#cancels.watch(heard);
  }

  /** Removes a job that is not RUNNING (see JobQueue#remove): its hash deleted, its key free. */
  async remove(jobId: string): Promise<void> {
    this.#assertOpen();
    await this.#runOnJob('remove', jobId, []);
  }

  /** A PENDING job's new priority (see JobQueue#changePriority). */
  async changePriority(jobId: string, priority: number): Promise<void> {
    this.#assertOpen();
    checkPriority(priority);
    await this.#runOnJob('changePriority', jobId, [String(priority)]);
  }

  /** A PENDING job runs `delayMillis` from now (see JobQueue#changeDelay). */
  async changeDelay(jobId: string, delayMillis: number): Promise<void> {
    this.#assertOpen();
    checkDelay(delayMillis);
    await this.#runOnJob('changeDelay', jobId, [String(delayMillis)]);
  }

  /** A delayed PENDING job ready now (see JobQueue#promote). */
  async promote(jobId: string): Promise<void> {
    this.#assertOpen();
    await this.#runOnJob('promote', jobId, []);
  }

  /** A PENDING job's new payload (see JobQueue#updatePayload). */
  async updatePayload(jobId: string, payload: Payload | null): Promise<void> {
    this.#assertOpen();
    const { value } = checkPayload(payload, this.#maxPayloadBytes);
    // Bytes are marked by a third argument (update-payload.lua); text sends the two it always did.
    await this.#runOnJob('updatePayload', jobId, typeof value === 'string' ? [value] : [bytesArg(value), '1']);
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
    const [, pending, ready, running, succeeded, dead, cancelled, paused, waitingChildren] = (await this.#run('stats', [], '')).map(Number) as number[];
    return {
      pending: pending!, ready: ready!, delayed: pending! - ready!, running: running!, succeeded: succeeded!, dead: dead!, cancelled: cancelled!,
      paused: paused === 1,
      // Once the queue has had a flow (stats.lua): its parents waiting for their children.
      ...(waitingChildren === undefined ? {} : { waitingChildren }),
    };
  }

  /**
   * Pauses the queue for every client of it, in every process: from the
   * reply on until `resume()`, polls (poll, pollMany, and the poll part of
   * completeAndPoll, completeManyAndPoll) lease nothing. Jobs already RUNNING
   * go on: complete, fail, extend and release work, as do submits (the jobs
   * wait). The state lives in Redis (one key in the queue's hash tag), so it
   * lasts across client restarts, and as long as Redis keeps its data.
   */
  async pause(): Promise<void> {
    this.#assertOpen();
    await this.#run('pause', [], '');
  }

  /** Ends a pause: polls lease jobs again, and clients waiting in `waitForWork` wake. */
  async resume(): Promise<void> {
    this.#assertOpen();
    await this.#run('resume', [], '');
  }

  /** Adds or replaces a repeatable job, for every client of the queue (see JobQueue#schedule). */
  async schedule(name: string, options: ScheduleOptions): Promise<ScheduleView> {
    const schedules = this.#scheduleStore();
    const schedule = checkSchedule(name, options, readNow(this.#time), this.#maxPayloadBytes);
    await schedules.put(schedule);
    return viewOf(schedule);
  }

  /** Removes a schedule (its jobs made so far stay); false if there was none of that name. */
  async unschedule(name: string): Promise<boolean> {
    const schedules = this.#scheduleStore();
    checkScheduleName(name);
    return schedules.remove(name);
  }

  /** Every schedule, by name, with its next tick. */
  async schedules(): Promise<ScheduleView[]> {
    return (await this.#scheduleStore().all()).map(viewOf);
  }

  /**
   * Fires the ticks due now (see JobQueue#runSchedules): exactly one job per
   * tick however many clients, in any processes, run schedulers at once.
   */
  async runSchedules(): Promise<string[]> {
    return this.fireSchedules((jobs) => this.submitMany(jobs));
  }

  /** @internal runSchedules, with the ticks' jobs submitted by `submitMany` (a PartitionedRedisQueue's, for its partition 0). */
  async fireSchedules(submitMany: (jobs: readonly NewJob[]) => Promise<string[]>): Promise<string[]> {
    return this.#scheduleStore().run(readNow(this.#time), submitMany);
  }

  /** Runs `runSchedules` now and then every `intervalMillis` until `stop()` or close (see JobQueue#startScheduler). */
  startScheduler(options?: SchedulerOptions): Scheduler {
    this.#assertOpen();
    return startScheduler(() => this.runSchedules(), checkSchedulerOptions(options));
  }

  #scheduleStore(): RedisSchedules {
    this.#assertOpen();
    return (this.#schedules ??= new RedisSchedules((script, keys, args) => this.#evaluate(script, keys, args), scheduleKeys(this.#handle.name)));
  }

  /** Whether the queue is paused (by any client). */
  async isPaused(): Promise<boolean> {
    return (await this.stats()).paused;
  }

  /**
   * Limits how many leases of jobs of `type` start per window, for every
   * client of the queue in every process; `null` removes the limit. Windows
   * are fixed, aligned to the queue's clock (see RateLimit). A poll that
   * meets a job of `type` once its window is used up passes over it to the
   * next best job; the job waits PENDING, in its place among its type, until
   * the window opens. The limit and the window's count live in Redis (keys in
   * the queue's hash tag) and the poll script enforces them, so the count is
   * exact however many clients poll. A new limit counts the leases made from
   * then on; a changed one keeps the current window's count.
   */
  async setRateLimit(type: string, limit: RateLimit | null): Promise<void> {
    this.#assertOpen();
    const checked = checkRateLimit(type, limit);
    await this.#run('setRateLimit', [type, String(checked?.max ?? 0), String(checked?.windowMillis ?? 0)], '');
  }

  /** Every job type's rate limit. */
  async rateLimits(): Promise<TypeRateLimit[]> {
    this.#assertOpen();
    const [, fields] = await this.#run('rateLimits', [], '');
    const pairs = fields as string[];
    const limits: TypeRateLimit[] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      const [max, windowMillis] = pairs[i + 1]!.split(',').map(Number);
      limits.push({ type: pairs[i]!, max: max!, windowMillis: windowMillis! });
    }
    return limits.sort(byType);
  }

  /**
   * Gives the jobs of `type` a RetryPolicy of their own, for every client of
   * the queue in every process; `null` removes it. A job submitted while its
   * type has one takes its `maxAttempts` (unless submit gave the job its
   * own); each failed attempt of a job of `type` waits the type's backoff
   * while it has one, else the calling client's policy's. Kept in Redis, in
   * the queue's hash tag.
   */
  async setRetryPolicy(type: string, policy: RetryPolicy | null): Promise<void> {
    this.#assertOpen();
    const checked = checkRetryPolicy(type, policy);
    const text = checked === null ? '' : `${checked.maxAttempts},${checked.baseBackoffMillis},${checked.maxBackoffMillis},${checked.jitter}`;
    await this.#run('setRetryPolicy', [type, text], '');
  }

  /** Every job type's own retry policy, by type. */
  async retryPolicies(): Promise<TypeRetryPolicy[]> {
    this.#assertOpen();
    const [, fields] = await this.#run('retryPolicies', [], '');
    const pairs = fields as string[];
    const policies: TypeRetryPolicy[] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      const [maxAttempts, base, max, jitter] = pairs[i + 1]!.split(',');
      policies.push({ type: pairs[i]!, policy: new RetryPolicy(Number(maxAttempts), Number(base), Number(max), { jitter: jitter as Jitter }) });
    }
    return policies.sort(byType);
  }

  /**
   * Caps how many jobs are RUNNING at once, for every client of the queue in
   * every process: `setConcurrency(max)` caps the whole queue,
   * `setConcurrency(type, max)` the jobs of `type`; `null` removes the cap
   * (see JobQueue#setConcurrency). The caps and the RUNNING counts live in
   * Redis (keys in the queue's hash tag, src/redis/lua/includes/caps.lua), and
   * every move into or out of RUNNING counts itself in the script that makes
   * it, so a cap holds exactly however many clients poll, and across restarts.
   */
  setConcurrency(max: number | null): Promise<void>;
  setConcurrency(type: string, max: number | null): Promise<void>;
  async setConcurrency(...args: unknown[]): Promise<void> {
    this.#assertOpen();
    const { type, max } = checkConcurrency(args);
    await this.#run('setConcurrency', [type ?? '', max === null ? '' : String(max)], '');
  }

  /**
   * Caps how many jobs of `group` (submit's `group` option) are RUNNING at
   * once, for every client of the queue in every process; `null` removes
   * the cap (see JobQueue#setGroupConcurrency). Kept as the type caps are
   * (src/redis/lua/includes/caps.lua): exact however many clients poll, and
   * across restarts. Naming a group here makes the queue take group turns
   * (src/redis/lua/includes/turns.lua).
   */
  setGroupConcurrency(group: string, max: number | null): Promise<void>;
  async setGroupConcurrency(...args: unknown[]): Promise<void> {
    this.#assertOpen();
    const { group, max } = checkGroupConcurrency(args);
    await this.#run('setGroupConcurrency', [group, max === null ? '' : String(max)], '');
  }

  /** The groups' concurrency caps, by group name. */
  async groupConcurrencyCaps(): Promise<GroupConcurrencyCap[]> {
    this.#assertOpen();
    const [, fields] = await this.#run('groupConcurrencyCaps', [], '');
    const pairs = fields as string[];
    const groups: GroupConcurrencyCap[] = [];
    for (let i = 0; i < pairs.length; i += 2) groups.push({ group: pairs[i]!, max: Number(pairs[i + 1]) });
    return groups.sort(byGroup);
  }

  /** The concurrency caps: the whole queue's (null: none) and each job type's, by type. */
  async concurrencyCaps(): Promise<ConcurrencyCaps> {
    this.#assertOpen();
    const [, queue, fields] = await this.#run('concurrencyCaps', [], '');
    const pairs = fields as string[];
    const types: ConcurrencyCaps['types'] = [];
    for (let i = 0; i < pairs.length; i += 2) types.push({ type: pairs[i]!, max: Number(pairs[i + 1]) });
    return { queue: queue === '' ? null : Number(queue), types: types.sort(byType) };
  }

  /**
   * For worker loops: after a `poll` that returned nothing, waits until work
   * may have arrived (a submit, a retry, a failed attempt by any client since
   * that poll ran) or `timeoutMillis` pass. Resolves true if woken by new
   * work. A poll that passed over jobs for their type's rate limit waits only
   * until the first of those windows opens (by the queue's clock, taken as
   * real milliseconds), and then resolves true. Other jobs that become ready
   * by the clock alone (a delayed runAt, a backoff, an expired lease) wake no
   * one: cap the timeout. The first call opens a second connection,
   * subscribed to the queue's channel.
   */
  async waitForWork(timeoutMillis: number): Promise<boolean> {
    this.#assertOpen();
    checkTimeout(timeoutMillis);
    const seen = this.#signalSeen;
    const opensIn = Math.max(0, this.#windowOpensAt - readNow(this.#time));
    await this.#wakeUps.listen();
    // Read only once subscribed: work announced after this read arrives as a message.
    const current = Number(await this.#send(() => this.#redis.hget(this.#keys.named.state, 'signal')));
    if (current > seen) return true;
    if (this.#closed) return false;
    if (opensIn >= timeoutMillis) return this.#wakeUps.wait(seen, timeoutMillis);
    await this.#wakeUps.wait(seen, opensIn);
    return true;
  }

  /** Closes this client's connections; the queue stays in Redis for every other client. */
  async close(): Promise<void> {
    if (this.#closed) return;
    // Calls made before the close go out before the connection ends, as unmerged ones would have.
    this.#sendMerged();
    this.#closed = true;
    await Promise.all([...this.#subscriptions].map((subscription) => subscription.close()));
    this.#liveness.stop();
    this.#wakeUps.close();
    this.#finishes.close();
    this.#cancels.close();
    await Promise.all([release(this.#redis), this.#subscriber.close()]);
  }

  /**
   * Subscribes to the queue's moves, made by any client of it in any process: resolves once
   * events are on for the queue (its event stream, bounded by `maxLen`) and the subscription reads
   * them, so that every move made from then on reaches its listeners. Events stay on for the queue
   * while some subscription renews them (every 10 s; they go off a minute after the last renewal),
   * or until `disableEvents()`. See QueueEvents and docs/redis.md.
   */
  async events(options?: QueueEventsOptions): Promise<QueueEvents> {
    this.#assertOpen();
    const { after, maxLen } = checkEventsOptions(options, 1);
    const subscription: QueueEvents = new QueueEvents(() => this.#subscriptions.delete(subscription));
    const reader = await this.openEventReader(subscription.sink, maxLen, after?.[0]);
    subscription.feedFrom([reader]);
    this.#subscriptions.add(subscription);
    return subscription;
  }

  /** leasehold's (PartitionedRedisQueue): a reader of this queue's event stream into `sink`. */
  openEventReader(sink: EventSink, maxLen: number, after: string | undefined): Promise<RedisEventReader> {
    return RedisEventReader.open(this.#redis, this.#keys, sink, {
      partition: this.#partition.index, maxLen, after, commandTimeoutMillis: this.#handle.options.commandTimeoutMillis, where: this.#where,
    });
  }

  /**
   * Turns the queue's events off: its moves write no event from then on (until a subscription
   * turns them on again: an open one does at its next renewal, and is told it missed moves),
   * and the stream is deleted.
   */
  async disableEvents(): Promise<void> {
    this.#assertOpen();
    try {
      await this.#redis.multi().hdel(this.#keys.named.state, 'events').unlink(this.#keys.named.events).exec();
    } catch (error) {
      throw backendError(error, this.#where);
    }
  }

  // ── plumbing ───────────────────────────────────────────────────────────

  /** Runs `command` about one job: its number is the first own argument, its hash a declared key (`raw`: see #run). */
  #runOnJob(command: Command, jobId: string, own: ReadonlyArray<string | Buffer>, raw = false): Promise<unknown[]> {
    const n = jobNumber(jobId);
    return this.#run(command, [n, ...own], jobId, [jobKey(this.#keys, n)], raw);
  }

  /**
   * Runs `command` with the queue's keys and `declared` (the hashes of the jobs
   * it names), the common arguments (now, a jitter seed, the policy) and
   * `own`, again until it has caught up and done its work (see CATCHING_UP);
   * a refusal becomes its error, about `jobId`. With `raw`, the reply's bulk strings are
   * Buffers (replies.ts reads them): for the commands whose replies may hold binary values.
   */
  async #run(command: Command, own: ReadonlyArray<string | Buffer>, jobId: string, declared: readonly string[] = [], raw = false): Promise<unknown[]> {
    const keys = [...this.#keys.declared, ...declared];
    for (;;) {
      const reply = await this.#send(() => this.#commands.run(command, keys, [...this.#commonArgs(), ...own], raw));
      const code = reply[0] as number;
      if (code === CATCHING_UP) continue;
      if (code < 0) throw refusalError(code, jobId, this.#capacity);
      return reply;
    }
  }

  /** The arguments every script takes first (COMMON_ARGS), for a run now. */
  #commonArgs(): string[] {
    const common: Record<(typeof COMMON_ARGS)[number], string> = {
      holder: HOLDER,
      now: String(readNow(this.#time)),
      seed: String(Math.floor(Math.random() * 2 ** 31)),
      settings: (this.#settings ??= this.#settingsText()),
    };
    return COMMON_ARGS.map((name) => common[name]);
  }

  /** The common `settings` argument (SETTINGS): the same text on every call of this client. */
  #settingsText(): string {
    const policy = this.#policy;
    const settings: Record<(typeof SETTINGS)[number], string> = {
      maxAttempts: String(policy.maxAttempts),
      baseBackoffMillis: String(policy.baseBackoffMillis),
      maxBackoffMillis: String(policy.maxBackoffMillis),
      jitter: policy.jitter,
      partitions: String(this.#partition.of),
      partition: String(this.#partition.index),
      maxFinished: String(this.#retain.maxFinished ?? ''),
      maxAgeMillis: String(this.#retain.maxAgeMillis ?? ''),
      maxDead: String(this.#retain.maxDead ?? ''),
      maxDeadAgeMillis: String(this.#retain.maxDeadAgeMillis ?? ''),
    };
    return SETTINGS.map((name) => settings[name]).join(',');
  }

  /** One run of a script of its own (schedules.ts), by its hash, or by its text if Redis does not have it. */
  #evaluate(script: Script, keys: readonly string[], args: readonly string[]): Promise<unknown[]> {
    return this.#send(async () => {
      try {
        return (await this.#redis.evalsha(script.sha, keys.length, ...keys, ...args)) as unknown[];
      } catch (error) {
        // Redis lost its script cache (a restart): NOSCRIPT means the script did not run.
        if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
        return (await this.#redis.eval(script.lua, keys.length, ...keys, ...args)) as unknown[];
      }
    });
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

/** A completeAndPoll call waiting for its tick's end (see RedisJobQueue#merge): its checked arguments, and how to settle it. */
interface MergedCall {
  readonly jobId: string;
  readonly n: string;
  /** The complete's token and result, as complete.lua takes them. */
  readonly complete: [string, string | Buffer];
  readonly workerId: string;
  readonly leaseMillis: string;
  readonly resolve: (lease: Lease | undefined) => void;
  readonly reject: (error: unknown) => void;
}

/** What a poll script says in place of a held job's time when it ran out of budget for passing over limited jobs (see pollBest). */
const AGAIN = 'again';

/** One of completeManyAndPoll's `done`, copied (its own properties, read once); anything but an object as it is, for the check to refuse. */
function copyOf(completion: unknown): Completion {
  return (completion !== null && typeof completion === 'object' ? { ...completion } : completion) as Completion;
}

/** The job number of `jobId` as the scripts take it. */
function jobNumber(jobId: string): string {
  return String(parseJobId(jobId));
}

/** A token as the scripts compare it: only a safe integer can be one. */
function tokenText(token: unknown): string {
  return typeof token === 'number' && Number.isSafeInteger(token) ? String(token) : '';
}

/** What precedes a binary result's bytes in a complete's arguments (see #resultArg). */
const BINARY_RESULT = Buffer.from([0]);

/** A Uint8Array as an argument ioredis sends as its bytes: a Buffer over the same memory (ioredis would send any other object as its text). */
function bytesArg(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A submitted job's arguments (submit.lua): all of them, or, for a batch of plain jobs, type, payload and priority. */
const FULL_WIDTH = 13;
const PLAIN_WIDTH = 3;

/** Whether every field of `job` beyond its type, payload and priority is the default submit.lua fills in for a plain job. */
function isPlain(job: CheckedJob): boolean {
  return job.runAtMillis === undefined && job.delayMillis === 0 && job.maxAttempts === 0 && job.key === null && job.timeoutMillis === 0 &&
    job.headersText === null && job.debounceMillis === 0 && job.throttleMillis === 0 && job.group === null;
}

/** A job's payload as a script's argument: its text, or its bytes. */
function payloadArg(payload: Payload): string | Buffer {
  return typeof payload === 'string' ? payload : bytesArg(payload);
}

/**
 * The last argument of a submit or submitFlow whose jobs have bytes: a '0' or '1' per job, '1' for a binary
 * payload (submit.lua, submit-flow.lua). None for a text batch, which sends exactly what it would without them.
 */
function binaryMarks(payloads: readonly Payload[]): string[] {
  if (payloads.every((payload) => typeof payload === 'string')) return [];
  return [payloads.map((payload) => (typeof payload === 'string' ? '0' : '1')).join('')];
}
