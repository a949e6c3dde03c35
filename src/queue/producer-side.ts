import { laterReading } from '../clock.js';
import { refusalError } from '../errors.js';
import { jobIdOf } from '../job-id.js';
import { AWAITS_COMMIT, CANCELLED_RUNNING, KEY_FREE, announceCancel, type Maintenance } from '../shm/core.js';
import { parseJobId } from '../validate/job-id.js';
import { checkJobs, checkSubmit, type CheckedJob, type NewJob, type SubmitOptions } from '../validate/job-input.js';
import type { QueueContext } from './context.js';
import type { Payload } from '../types.js';
import { checkReleased, checkReserveLength, notReserved } from '../validate/reserved-bytes.js';

/**
 * The producer calls of one JobQueue instance: submit, submitMany, cancel,
 * retryDead. Each runs under the maintenance lock (the ready rings have one
 * appender), then bumps the work signal once, waking idle workers.
 */
export class ProducerSide {
  readonly #ctx: QueueContext;
  /** A reservation under the lock (see JobQueue#reserveBytes). */
  readonly #reserve = (core: Maintenance, _now: number, byteLength: number): Uint8Array | undefined => core.reserved.reserve(byteLength);
  /** A release under the lock: false for bytes this instance never handed out. */
  readonly #release = (core: Maintenance, _now: number, bytes: Uint8Array): boolean => core.reserved.release(bytes);
  /** One submit under the lock, made once: `submit` makes no closure per call. */
  readonly #submitOne = (core: Maintenance, now: number, job: CheckedJob): string | typeof AWAITS_COMMIT => this.#submitChecked(core, job, now);

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  submit(type: string, payload: Payload | null | undefined, priorityOrOptions: number | SubmitOptions, runAtMillis: number | undefined): string {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const job = checkSubmit(type, payload, priorityOrOptions, runAtMillis, ctx.options.maxPayloadBytes);
    const tracing = ctx.tracing;
    const id = tracing === undefined ? this.#untilDurable(this.#submitOne, job) : tracing.traced([job], () => [this.#untilDurable(this.#submitOne, job)])[0]!;
    ctx.memory.signal.bump();
    return id;
  }

  /** A run of the arena for a payload written in place, or a plain Uint8Array where none can be had (see JobQueue#reserveBytes). */
  reserveBytes(byteLength: number): Uint8Array {
    const ctx = this.#ctx;
    ctx.assertOpen();
    checkReserveLength(byteLength, ctx.options.maxPayloadBytes);
    return ctx.locked(this.#reserve, byteLength) ?? ctx.core.reserved.handPlain(new Uint8Array(byteLength));
  }

  releaseBytes(bytes: Uint8Array): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    checkReleased(bytes);
    if (!ctx.locked(this.#release, bytes)) throw notReserved();
  }

  /**
   * All or none. A job whose key is taken (see Maintenance#keyHolder) gets
   * the holder's id, as `submit` would give it, and is not stored; a key
   * given twice in the batch is the first one's: every later job with it
   * gets the id of the first (new, or the holder's), and is not stored.
   */
  submitMany(jobs: readonly NewJob[]): string[] {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const checked = checkJobs(jobs, ctx.options.maxPayloadBytes);
    const batch = newBatch(checked);
    const tracing = ctx.tracing;
    const ids = tracing === undefined ? this.#untilDurable(this.#submitBatch, batch) : tracing.traced(checked, () => this.#untilDurable(this.#submitBatch, batch));
    ctx.memory.signal.bump();
    return ids;
  }

  /**
   * A batch under the lock: the ids of its jobs, or AWAITS_COMMIT (a holder
   * of one of its keys is frozen). Run again after a takeover (this holder
   * was taken for dead between two of its jobs: relies on I13),
   * it goes on from the first job it had not placed: the ones placed stand.
   */
  readonly #submitBatch = (core: Maintenance, now: number, batch: Batch): string[] | typeof AWAITS_COMMIT => {
    const { jobs, ids, repeats } = batch;
    // Ids a key holder gave in an earlier run are looked up again: the holder may have changed since.
    ids.fill(undefined, batch.placed);
    let chunks = 0;
    let fresh = 0;
    /** The reservations this run adopts, each once (see Maintenance#batchJobChunks). */
    const adopted = new Set<Uint8Array>();
    for (let i = batch.placed; i < jobs.length; i++) {
      const job = jobs[i]!;
      if (repeats[i]! >= 0) continue;
      // Before any job is placed: a group the table has no room for refuses the whole batch.
      if (job.group !== null) core.groupNumber(job.group);
      if (job.key !== null) {
        const holder = core.keyHolder(job.key, now, job.throttleMillis);
        if (holder === AWAITS_COMMIT) return AWAITS_COMMIT;
        if (holder >= 0) {
          ids[i] = jobIdOf(holder);
          continue;
        }
      }
      const jobChunks = core.batchJobChunks(job, adopted);
      // Before a job of this run is placed: a reservation reclaimed refuses them all (keeps I30).
      if (jobChunks < 0) throw refusalError(jobChunks, '', this.#ctx.options.capacity);
      chunks += jobChunks;
      fresh++;
    }
    const refusal = core.roomFor(fresh, chunks);
    if (refusal === AWAITS_COMMIT) return AWAITS_COMMIT;
    if (refusal < 0) throw refusalError(refusal, '', this.#ctx.options.capacity);
    for (let i = batch.placed; i < jobs.length; i++) {
      if (repeats[i]! < 0 && ids[i] === undefined) {
        // The room is made for the whole batch: no job of it waits for a commit to be placed.
        const id = this.#place(core, jobs[i]!, now);
        if (id === AWAITS_COMMIT) return AWAITS_COMMIT;
        ids[i] = id;
      }
      batch.placed = i + 1;
    }
    return ids.map((id, i) => (repeats[i]! >= 0 ? ids[repeats[i]!] : id)!);
  };

  /** Runs a submit under the lock again until it returns more than AWAITS_COMMIT, each time once the commit it waits for is through. */
  #untilDurable<T, A>(op: (core: Maintenance, now: number, arg: A) => T | typeof AWAITS_COMMIT, arg: A): T {
    const ctx = this.#ctx;
    for (;;) {
      const result = ctx.locked(op, arg);
      if (result !== AWAITS_COMMIT) return result as T;
      ctx.makeDurable(ctx.core.notes.awaitedTicket());
    }
  }

  /** One job: the id of the job that holds its key, if one does; else it is stored. */
  #submitChecked(core: Maintenance, job: CheckedJob, now: number): string | typeof AWAITS_COMMIT {
    if (job.key !== null && job.debounceMillis > 0) {
      const edited = core.debounce(job.key, { value: job.payload, bytes: job.payloadBytes }, job.debounceMillis, now);
      if (edited === AWAITS_COMMIT) return AWAITS_COMMIT;
      if (edited >= 0) return jobIdOf(edited);
      if (edited !== KEY_FREE) throw refusalError(edited, '', this.#ctx.options.capacity);
    } else if (job.key !== null) {
      const holder = core.keyHolder(job.key, now, job.throttleMillis);
      if (holder === AWAITS_COMMIT) return AWAITS_COMMIT;
      if (holder >= 0) return jobIdOf(holder);
    }
    return this.#place(core, job, now);
  }

  #place(core: Maintenance, job: CheckedJob, now: number): string | typeof AWAITS_COMMIT {
    // A runAt from the clock is read as the job is placed: a lock-free claim that read a later time and passed
    // over where it goes must not come before it (relies on I2). An exclusive queue has no other claimer.
    const at = job.runAtMillis === undefined && !this.#ctx.memory.exclusive ? laterReading(this.#ctx.time, now) : now;
    const runAt = job.runAtMillis ?? at + job.delayMillis;
    const jobNum = core.submit(job, runAt, at);
    if (jobNum === AWAITS_COMMIT) return AWAITS_COMMIT;
    if (jobNum < 0) throw refusalError(jobNum, '', this.#ctx.options.capacity);
    return jobIdOf(jobNum);
  }

  cancel(jobId: string): void {
    const ctx = this.#ctx;
    const ended = ctx.withJob(jobId, parseJobId(jobId), (core, slot, now) => core.cancel(slot, now));
    // Once the move is durable (an undone cancel aborts no handler): the worker loops look at their jobs.
    if (ended === CANCELLED_RUNNING) announceCancel(ctx.memory.lockWords);
  }

  remove(jobId: string): void {
    this.#ctx.withJob(jobId, parseJobId(jobId), (core, slot, now) => core.remove(slot, now));
  }

  retryDead(jobId: string): void {
    const ctx = this.#ctx;
    ctx.withJob(jobId, parseJobId(jobId), (core, slot, now) => core.retryDead(slot, now));
    ctx.memory.signal.bump();
  }
}

/** A submitMany's jobs, and how far it got: kept across the runs of its locked call (see ProducerSide#submitBatch). */
interface Batch {
  jobs: readonly CheckedJob[];
  /** Per job: its id once known (placed, or its key's holder). */
  ids: (string | undefined)[];
  /** Per job: the earlier job of the batch whose key it repeats, or -1. */
  repeats: readonly number[];
  /** Jobs before this one are placed (or need no place). */
  placed: number;
}

function newBatch(jobs: readonly CheckedJob[]): Batch {
  const repeats = new Array<number>(jobs.length).fill(-1);
  const firstWithKey = new Map<string, number>();
  for (let i = 0; i < jobs.length; i++) {
    const key = jobs[i]!.key;
    if (key === null) continue;
    const first = firstWithKey.get(key);
    if (first === undefined) firstWithKey.set(key, i);
    else repeats[i] = first;
  }
  return { jobs, ids: new Array<string | undefined>(jobs.length).fill(undefined), repeats, placed: 0 };
}
