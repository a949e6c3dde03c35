import { laterReading } from '../clock.js';
import { refusalError } from '../errors.js';
import { jobIdOf } from '../job-id.js';
import { AWAITS_COMMIT, type Maintenance } from '../shm/maintenance.js';
import { checkJobs, checkSubmit, parseJobId, type CheckedJob, type NewJob, type SubmitOptions } from '../validate.js';
import type { QueueContext } from './context.js';

/**
 * The producer calls of one JobQueue instance: submit, submitMany, cancel,
 * retryDead. Each runs under the maintenance lock (the ready rings have one
 * appender), then bumps the work signal once, waking idle workers.
 */
export class ProducerSide {
  readonly #ctx: QueueContext;
  /** One submit under the lock, made once: `submit` makes no closure per call. */
  readonly #submitOne = (core: Maintenance, now: number, job: CheckedJob): string | typeof AWAITS_COMMIT => this.#submitChecked(core, job, now);

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  submit(type: string, payload: string | null | undefined, priorityOrOptions: number | SubmitOptions, runAtMillis: number | undefined): string {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const job = checkSubmit(type, payload, priorityOrOptions, runAtMillis, ctx.options.maxPayloadBytes);
    const tracing = ctx.tracing;
    const id = tracing === undefined ? this.#untilDurable(this.#submitOne, job) : tracing.traced([job], () => [this.#untilDurable(this.#submitOne, job)])[0]!;
    ctx.memory.signal.bump();
    return id;
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
    const tracing = ctx.tracing;
    const ids = tracing === undefined ? this.#untilDurable(this.#submitBatch, checked) : tracing.traced(checked, () => this.#untilDurable(this.#submitBatch, checked));
    ctx.memory.signal.bump();
    return ids;
  }

  /** A batch under the lock: the ids of its jobs, or AWAITS_COMMIT (a holder of one of its keys is frozen). */
  readonly #submitBatch = (core: Maintenance, now: number, checked: CheckedJob[]): string[] | typeof AWAITS_COMMIT => {
    const ids = new Array<string>(checked.length);
    /** Per job: the earlier job of the batch whose key it repeats, or -1. */
    const repeats = new Array<number>(checked.length).fill(-1);
    const firstWithKey = new Map<string, number>();
    let chunks = 0;
    let fresh = 0;
    for (let i = 0; i < checked.length; i++) {
      const job = checked[i]!;
      if (job.key !== null) {
        const first = firstWithKey.get(job.key);
        if (first !== undefined) {
          repeats[i] = first;
          continue;
        }
        firstWithKey.set(job.key, i);
        const holder = core.keyHolder(job.key, now);
        if (holder === AWAITS_COMMIT) return AWAITS_COMMIT;
        if (holder >= 0) {
          ids[i] = jobIdOf(holder);
          continue;
        }
      }
      chunks += core.chunksForJob(job.type, job.typeBytes, job.payloadBytes, job.keyBytes, job.headersText);
      fresh++;
    }
    const refusal = core.roomFor(fresh, chunks);
    if (refusal < 0) throw refusalError(refusal, '', this.#ctx.options.capacity);
    for (let i = 0; i < checked.length; i++) {
      if (repeats[i]! < 0 && ids[i] === undefined) ids[i] = this.#place(core, checked[i]!, now);
    }
    for (let i = 0; i < checked.length; i++) if (repeats[i]! >= 0) ids[i] = ids[repeats[i]!]!;
    return ids;
  };

  /** Runs a submit under the lock again until it returns more than AWAITS_COMMIT, each time once the commit it waits for is through. */
  #untilDurable<T, A>(op: (core: Maintenance, now: number, arg: A) => T | typeof AWAITS_COMMIT, arg: A): T {
    const ctx = this.#ctx;
    for (;;) {
      const result = ctx.locked(op, arg);
      if (result !== AWAITS_COMMIT) return result as T;
      ctx.makeDurable(ctx.core.awaitedTicket());
    }
  }

  /** One job: the id of the job that holds its key, if one does; else it is stored. */
  #submitChecked(core: Maintenance, job: CheckedJob, now: number): string | typeof AWAITS_COMMIT {
    if (job.key !== null) {
      const holder = core.keyHolder(job.key, now);
      if (holder === AWAITS_COMMIT) return AWAITS_COMMIT;
      if (holder >= 0) return jobIdOf(holder);
    }
    return this.#place(core, job, now);
  }

  #place(core: Maintenance, job: CheckedJob, now: number): string {
    // A runAt from the clock is read as the job is placed: a lock-free claim that read a later time and passed
    // over where it goes must not come before it (see Mover#apply). An exclusive queue has no other claimer.
    const at = job.runAtMillis === undefined && !this.#ctx.memory.exclusive ? laterReading(this.#ctx.time, now) : now;
    const runAt = job.runAtMillis ?? at + job.delayMillis;
    const jobNum = core.submit(job, runAt, at);
    if (jobNum < 0) throw refusalError(jobNum, '', this.#ctx.options.capacity);
    return jobIdOf(jobNum);
  }

  cancel(jobId: string): void {
    this.#ctx.withJob(jobId, parseJobId(jobId), (core, slot, now) => core.cancel(slot, now));
  }

  retryDead(jobId: string): void {
    const ctx = this.#ctx;
    ctx.withJob(jobId, parseJobId(jobId), (core, slot, now) => core.retryDead(slot, now));
    ctx.memory.signal.bump();
  }
}
