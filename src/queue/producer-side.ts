import { laterReading } from '../clock.js';
import { refusalError } from '../errors.js';
import type { Maintenance } from '../shm/maintenance.js';
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
  readonly #submitOne = (core: Maintenance, now: number, job: CheckedJob): string => this.#submitChecked(core, job, now);

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  submit(type: string, payload: string | null | undefined, priorityOrOptions: number | SubmitOptions, runAtMillis: number | undefined): string {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const job = checkSubmit(type, payload, priorityOrOptions, runAtMillis, ctx.options.maxPayloadBytes);
    const tracing = ctx.tracing;
    const id = tracing === undefined ? ctx.locked(this.#submitOne, job) : tracing.traced([job], () => [ctx.locked(this.#submitOne, job)])[0]!;
    ctx.memory.signal.bump();
    return id;
  }

  submitMany(jobs: readonly NewJob[]): string[] {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const checked = checkJobs(jobs, ctx.options.maxPayloadBytes);
    const tracing = ctx.tracing;
    const ids = tracing === undefined ? this.#submitAll(checked) : tracing.traced(checked, () => this.#submitAll(checked));
    ctx.memory.signal.bump();
    return ids;
  }

  /** Submits a batch under one lock: all of it, or (no room for all) none. */
  #submitAll(checked: readonly CheckedJob[]): string[] {
    const ctx = this.#ctx;
    return ctx.locked((core, now) => {
      const chunks = checked.reduce((sum, job) => sum + core.chunksForJob(job.type, job.typeBytes, job.payloadBytes, job.headersText), 0);
      const refusal = core.roomFor(checked.length, chunks);
      if (refusal < 0) throw refusalError(refusal, '', ctx.options.capacity);
      return checked.map((job) => this.#submitChecked(core, job, now));
    });
  }

  #submitChecked(core: Maintenance, job: CheckedJob, now: number): string {
    // A runAt from the clock is read as the job is placed: a lock-free claim that read a later time and passed
    // over where it goes must not come before it (see Mover#apply).
    const at = job.runAtMillis === undefined ? laterReading(this.#ctx.time, now) : now;
    const runAt = job.runAtMillis ?? at + job.delayMillis;
    const jobNum = core.submit(job.type, job.typeBytes, job.payload, job.payloadBytes, job.priority, runAt, job.maxAttempts, job.headersText, at);
    if (jobNum < 0) throw refusalError(jobNum, '', this.#ctx.options.capacity);
    // Not `J${jobNum}`: that goes through V8's number-to-string cache, which keeps each new id's digits
    // alive through the next scavenges; a million submits then grow the young generation by 8 MiB
    // (measured on Node 20, bench/memory.ts). toFixed(0) makes the same digits and caches nothing.
    return `J${jobNum.toFixed(0)}`;
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
