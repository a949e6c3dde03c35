import { ManualClock, systemClock, type TimeSource } from './clock.js';
import {
  IllegalStateError, InvalidArgumentError, JobNotFoundError, describe, refusalError,
} from './errors.js';
import { MAX_TYPE_BYTES, fillOptions, type FilledOptions, type JobQueueOptions } from './options.js';
import { RetryPolicy, type Jitter } from './policy.js';
import { LockLost, QueueCore, type JobRecord } from './shm/core.js';
import { BUFFER_NAMES, bufferBytes, type QueueBuffers } from './shm/layout.js';
import { QueueMemory } from './shm/memory.js';
import { JobStatus, type JobView, type Lease, type QueueStats } from './types.js';

/**
 * What `share()` returns: plain data and SharedArrayBuffers, so it survives
 * `postMessage` / `workerData`. `JobQueue.attach(handle)` in any thread opens
 * the same queue.
 */
export interface SharedQueueHandle {
  readonly kind: 'leasehold/shared-queue';
  readonly buffers: QueueBuffers;
  readonly options: FilledOptions;
  readonly policy: { maxAttempts: number; baseBackoffMillis: number; maxBackoffMillis: number; jitter: Jitter };
  /** The ManualClock's word, or 'system' for systemClock, or null for a clock that cannot cross threads. */
  readonly clock: SharedArrayBuffer | 'system' | null;
}

export interface FailOptions {
  /**
   * Dead-letter the job now, whatever attempts it has left.
   * @default false
   */
  permanent?: boolean;
}

const STATUS_NAMES = ['FREE', JobStatus.PENDING, JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED] as const;
const JOB_ID = /^J[1-9][0-9]{0,15}$/;

/**
 * A retrying job queue whose state lives in shared memory.
 *
 * Concurrency contract: any number of threads may attach to one queue and
 * call any method at once. Each call runs under the queue lock, a short
 * critical section on shared words; a job is leased by a CAS of its slot's
 * lease word, so it is never leased to two workers at once, and a zombie's
 * complete (an old token) is refused. A thread killed mid-call costs the
 * others at most `lockTimeoutMillis` of waiting, after which the queue is
 * repaired from the slot words: no job is lost or leased twice.
 *
 * Every call first brings the queue up to the clock's `now`: leases that
 * expired count as failed attempts at their leaseUntil, delayed jobs whose
 * time has come become ready.
 */
export class JobQueue {
  readonly #time: TimeSource;
  readonly #policy: RetryPolicy;
  readonly #options: FilledOptions;
  readonly #memory: QueueMemory;
  readonly #core: QueueCore;
  #closed = false;
  #signalSeen = 0;

  constructor(time: TimeSource, policy: RetryPolicy, options?: JobQueueOptions);
  /** @internal Opens an existing queue's buffers (see `attach`). */
  constructor(time: TimeSource, policy: RetryPolicy, options: JobQueueOptions | undefined, buffers: QueueBuffers);
  constructor(time: TimeSource, policy: RetryPolicy, options?: JobQueueOptions, buffers?: QueueBuffers) {
    if (time === null || typeof time !== 'object' || typeof time.now !== 'function') {
      throw new InvalidArgumentError(`Expected \`time\` to be a TimeSource with a now() method, got ${describe(time)}`);
    }
    if (!(policy instanceof RetryPolicy)) {
      throw new InvalidArgumentError(`Expected \`policy\` to be a RetryPolicy, got ${describe(policy)}`);
    }
    this.#time = time;
    this.#policy = policy;
    this.#options = fillOptions(options);
    this.#memory = new QueueMemory(buffers ?? QueueMemory.create(this.#options.capacity, this.#options.arenaBytes), this.#options.lockTimeoutMillis);
    this.#core = new QueueCore(this.#memory, policy);
  }

  /** A handle to post to other threads; `JobQueue.attach(handle)` there opens this same queue. */
  share(): SharedQueueHandle {
    this.#assertOpen();
    const p = this.#policy;
    const time = this.#time;
    return {
      kind: 'leasehold/shared-queue',
      buffers: this.#memory.buffers,
      options: this.#options,
      policy: { maxAttempts: p.maxAttempts, baseBackoffMillis: p.baseBackoffMillis, maxBackoffMillis: p.maxBackoffMillis, jitter: p.jitter },
      clock: time instanceof ManualClock ? time.buffer : time === systemClock ? 'system' : null,
    };
  }

  /** Opens, in this thread, the queue a `share()` handle points at. Without `time`, the handle's clock. */
  static attach(handle: SharedQueueHandle, time?: TimeSource): JobQueue {
    const notAHandle = () => new InvalidArgumentError(`Expected a handle from JobQueue#share(), got ${describe(handle)}`);
    if (handle === null || typeof handle !== 'object' || handle.kind !== 'leasehold/shared-queue' ||
        handle.policy === null || typeof handle.policy !== 'object') {
      throw notAHandle();
    }
    const options = fillOptions(handle.options);
    // Every buffer must be the one the options size: a mismatched handle would corrupt memory later.
    const sizes = bufferBytes(options.capacity, options.arenaBytes);
    if (BUFFER_NAMES.some((name) => !(handle.buffers?.[name] instanceof SharedArrayBuffer) || handle.buffers[name].byteLength !== sizes[name])) {
      throw notAHandle();
    }
    const clock = time ?? clockOf(handle.clock);
    const p = handle.policy;
    const policy = new RetryPolicy(p.maxAttempts, p.baseBackoffMillis, p.maxBackoffMillis, { jitter: p.jitter });
    return new JobQueue(clock, policy, options, handle.buffers);
  }

  /** Queues a new PENDING job and returns its id, `J1`, `J2`, ... */
  submit(type: string, payload?: string | null, priority = 0, runAtMillis?: number): string {
    this.#assertOpen();
    if (typeof type !== 'string' || type.trim() === '') {
      throw new InvalidArgumentError(`Expected \`type\` to be a non-blank string, got ${describe(type)}`);
    }
    const typeBytes = Buffer.byteLength(type);
    if (typeBytes > MAX_TYPE_BYTES || !type.isWellFormed()) {
      throw new InvalidArgumentError(`Expected \`type\` to be a well-formed string of at most ${MAX_TYPE_BYTES} UTF-8 bytes`);
    }
    const text = payload ?? '';
    if (typeof text !== 'string' || !text.isWellFormed()) {
      throw new InvalidArgumentError(`Expected \`payload\` to be a well-formed string, null or undefined, got ${describe(payload)}`);
    }
    const payloadBytes = Buffer.byteLength(text);
    if (payloadBytes > this.#options.maxPayloadBytes) {
      throw new InvalidArgumentError(
        `Expected \`payload\` to be at most ${this.#options.maxPayloadBytes} UTF-8 bytes (maxPayloadBytes), got ${payloadBytes}`,
      );
    }
    if (typeof priority !== 'number' || !Number.isInteger(priority)) {
      throw new InvalidArgumentError(`Expected \`priority\` to be an integer, got ${describe(priority)}`);
    }
    if (runAtMillis !== undefined && (typeof runAtMillis !== 'number' || !Number.isFinite(runAtMillis))) {
      throw new InvalidArgumentError(`Expected \`runAtMillis\` to be a finite number, got ${describe(runAtMillis)}`);
    }
    const id = this.#locked((core, now) => {
      const jobNum = core.submit(type, typeBytes, text, payloadBytes, priority, runAtMillis ?? now, now);
      if (jobNum < 0) throw refusalError(jobNum, '', this.#options.capacity);
      return `J${jobNum}`;
    });
    this.#memory.signal.bump();
    return id;
  }

  /** Leases the best ready job to `workerId` until now + leaseMillis, or returns undefined if none is ready. */
  poll(workerId: string, leaseMillis: number): Lease | undefined {
    this.#assertOpen();
    if (typeof workerId !== 'string' || workerId.trim() === '') {
      throw new InvalidArgumentError(`Expected \`workerId\` to be a non-blank string, got ${describe(workerId)}`);
    }
    assertLeaseMillis(leaseMillis);
    // Read before polling: work that arrives after this point wakes `waitForWork`.
    this.#signalSeen = this.#memory.signal.current();
    return this.#locked((core, now) => {
      const slot = core.poll(workerId, leaseMillis, now);
      return slot < 0 ? undefined : core.lease(slot);
    });
  }

  /** Marks the job SUCCEEDED; `token` must be its current, valid lease. */
  complete(jobId: string, token: number): void {
    this.#withJob(jobId, (core, slot) => core.complete(slot, token));
  }

  /**
   * Records a failed attempt: the job retries after its backoff, or is
   * dead-lettered when no attempts are left — or at once with `{ permanent: true }`
   * (a poison job that no retry will fix).
   */
  fail(jobId: string, token: number, error?: string | null, options?: FailOptions): void {
    if (error !== undefined && error !== null && typeof error !== 'string') {
      throw new InvalidArgumentError(`Expected \`error\` to be a string, null or undefined, got ${describe(error)}`);
    }
    const permanent = options?.permanent ?? false;
    if (typeof permanent !== 'boolean') {
      throw new InvalidArgumentError(`Expected \`permanent\` to be a boolean, got ${describe(permanent)}`);
    }
    const text = error === undefined || error === null ? null : truncate(error, this.#options.maxErrorBytes);
    this.#withJob(jobId, (core, slot, now) => core.fail(slot, token, text, permanent, now));
    // A retry with no backoff is ready at once.
    this.#memory.signal.bump();
  }

  /** Heartbeat: the lease now lasts until now + leaseMillis. Returns the new leaseUntil. */
  extend(jobId: string, token: number, leaseMillis: number): number {
    assertLeaseMillis(leaseMillis);
    return this.#withJob(jobId, (core, slot, now) => core.extend(slot, token, leaseMillis, now));
  }

  view(jobId: string): JobView {
    return this.#withJob(jobId, (core, slot) => toView(core.read(slot)));
  }

  /** Every DEAD job, in submission order. */
  deadLetters(): JobView[] {
    return this.#locked((core) => core.deadSlots().map((slot) => toView(core.read(slot))));
  }

  /** Puts a DEAD job back to PENDING, ready now, with attempts reset to 0 (lastError kept). */
  retryDead(jobId: string): void {
    this.#withJob(jobId, (core, slot, now) => core.retryDead(slot, now));
    this.#memory.signal.bump();
  }

  /**
   * For worker loops: after a `poll` that returned nothing, sleeps until work
   * may have arrived (a submit, a retry, a failed attempt anywhere since that
   * poll began) or `timeoutMillis` pass, without blocking this thread's event
   * loop. Resolves true if woken by new work. Jobs that become ready by the
   * clock alone (a delayed runAt, a backoff) wake no one: cap the timeout.
   */
  waitForWork(timeoutMillis: number): Promise<boolean> {
    try {
      this.#assertOpen();
      if (typeof timeoutMillis !== 'number' || !(timeoutMillis >= 0)) {
        throw new InvalidArgumentError(`Expected \`timeoutMillis\` to be a number >= 0, got ${describe(timeoutMillis)}`);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#memory.signal.wait(this.#signalSeen, timeoutMillis);
  }

  /** Cancels a PENDING job. */
  cancel(jobId: string): void {
    this.#withJob(jobId, (core, slot) => core.cancel(slot));
  }

  /** PENDING jobs, ready or delayed. */
  queueDepth(): number {
    return this.stats().pending;
  }

  /** DEAD jobs. */
  dlqDepth(): number {
    return this.stats().dead;
  }

  stats(): QueueStats {
    return this.#locked((core) => core.stats());
  }

  /** Closes this thread's view of the queue; other threads' views stay open. */
  close(): void {
    this.#closed = true;
  }

  // ── plumbing ───────────────────────────────────────────────────────────

  /** Runs `op` under the queue lock, after repairing a dead holder's damage and bringing the queue up to now. */
  #locked<T>(op: (core: QueueCore, now: number) => T): T {
    this.#assertOpen();
    const { lock } = this.#memory;
    const core = this.#core;
    for (;;) {
      const seen = this.#now();
      const repair = lock.acquire();
      try {
        const now = core.prepare(seen, repair, () => this.#now());
        return op(core, now);
      } catch (error) {
        // Our lock was taken over mid-call (we were presumed dead): the move did not happen; start again.
        if (!(error instanceof LockLost)) throw error;
      } finally {
        lock.release();
      }
    }
  }

  /**
   * Runs `op` on the slot of `jobId`; a negative result is a refusal and
   * becomes the matching error. (Tokens are not checked here: one that is not
   * even a number is simply not the job's current lease, which the core
   * refuses as stale once the id is found.)
   */
  #withJob<T>(jobId: string, op: (core: QueueCore, slot: number, now: number) => T): T {
    const jobNum = parseJobId(jobId);
    return this.#locked((core, now) => {
      const slot = core.find(jobNum);
      if (slot < 0) throw refusalError(slot, jobId, this.#options.capacity);
      const result = op(core, slot, now);
      if (typeof result === 'number' && result < 0) throw refusalError(result, jobId, this.#options.capacity);
      return result;
    });
  }

  #now(): number {
    const now = this.#time.now();
    if (typeof now !== 'number' || !Number.isFinite(now)) {
      throw new InvalidArgumentError(`Expected the TimeSource to return a finite number, got ${describe(now)}`);
    }
    return now;
  }

  #assertOpen(): void {
    if (this.#closed) throw new IllegalStateError('This queue was closed');
  }
}

function clockOf(clock: SharedQueueHandle['clock']): TimeSource {
  if (clock instanceof SharedArrayBuffer) return ManualClock.fromBuffer(clock);
  if (clock === 'system') return systemClock;
  throw new InvalidArgumentError('The queue was made with a TimeSource that cannot cross threads: pass one to JobQueue.attach(handle, time)');
}

function parseJobId(jobId: string): number {
  if (typeof jobId !== 'string' || !JOB_ID.test(jobId)) {
    throw new JobNotFoundError(`No job with id ${describe(jobId)}: ids look like "J1"`);
  }
  const n = Number(jobId.slice(1));
  if (!Number.isSafeInteger(n)) throw new JobNotFoundError(`No job with id ${describe(jobId)}`);
  return n;
}

function assertLeaseMillis(leaseMillis: number): void {
  if (typeof leaseMillis !== 'number' || !Number.isFinite(leaseMillis) || !(leaseMillis > 0)) {
    throw new InvalidArgumentError(`Expected \`leaseMillis\` to be a finite number > 0, got ${describe(leaseMillis)}`);
  }
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes, at a character boundary. */
function truncate(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return text;
  const bytes = Buffer.from(text);
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end);
}

function toView(job: JobRecord): JobView {
  const status = STATUS_NAMES[job.status] as JobStatus;
  return {
    id: `J${job.jobNum}`,
    type: job.type,
    priority: job.priority,
    status,
    attempts: job.attempts,
    nextRunAt: job.runAt,
    lastError: job.lastError,
    payload: job.payload,
    leaseUntil: status === JobStatus.RUNNING ? job.leaseUntil : null,
    workerId: job.workerId,
  };
}


