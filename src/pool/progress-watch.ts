/**
 * The main thread's side of `ctx.progress()`: it samples the progress words
 * of every inflight place (layout.ts: REPORTS, VALUE) on the watchdog's tick,
 * and while a place's job keeps reporting it extends that job's lease on its
 * behalf, at most every third of `leaseMillis` — so a synchronous handler
 * that reports is not taken for hung, and one that stops reporting loses its
 * lease as it would without progress.
 *
 * Fencing: a place runs one job after another, and its REPORTS word counts
 * across them. A sample counts a report for a job only while the place held
 * the same TOKEN at the previous sample and still holds it after REPORTS was
 * read: a job's first sample only sets its baseline. So reports of the job
 * before never extend the next job's lease, and an extend names the token it
 * read, which the queue refuses once that lease is over (a job that ended).
 */
import { jobIdOf } from '../job-id.js';
import type { PoolQueue } from './backend.js';
import { progressValueOf } from './job-context.js';
import { INFLIGHT_ATTEMPT, INFLIGHT_JOB_NUM, INFLIGHT_TOKEN, PROGRESS_REPORTS, PROGRESS_VALUE, inflightAt, progressAt } from './layout.js';

/** What the watch tells of a job whose reports moved since the previous sample. */
export interface ProgressReport {
  readonly jobId: string;
  readonly attempt: number;
  /** The last value reported (kept as a float32: 7 significant digits). */
  readonly progress: number;
}

interface PlaceSample {
  /** The token the place held at the previous sample; -1: none. */
  token: number;
  reports: number;
  /** When the lease was last extended, or the job first seen (performance.now()). */
  extendedAt: number;
  /** Reports came since the last extend. */
  unextended: boolean;
}

export class ProgressWatch {
  readonly #queue: Pick<PoolQueue, 'extend'>;
  readonly #inflight: Float64Array;
  readonly #words: Int32Array;
  readonly #concurrency: number;
  readonly #leaseMillis: number;
  readonly #samples: PlaceSample[];

  constructor(queue: Pick<PoolQueue, 'extend'>, inflight: Float64Array, progress: SharedArrayBuffer, threads: number, concurrency: number, leaseMillis: number) {
    this.#queue = queue;
    this.#inflight = inflight;
    this.#words = new Int32Array(progress);
    this.#concurrency = concurrency;
    this.#leaseMillis = leaseMillis;
    this.#samples = Array.from({ length: threads * concurrency }, () => ({ token: -1, reports: 0, extendedAt: 0, unextended: false }));
  }

  /**
   * Samples `thread`'s places: extends the leases of the jobs that reported since their last extend (a third of a
   * lease ago at least), and calls `heard` for each job whose reports moved since the previous sample. Whether any did:
   * the thread is alive though its event loop may not turn.
   */
  sample(thread: number, now: number, heard: ((report: ProgressReport) => void) | undefined): boolean {
    let moved = false;
    const inflight = this.#inflight;
    for (let place = 0; place < this.#concurrency; place++) {
      const sample = this.#samples[thread * this.#concurrency + place]!;
      const at = inflightAt(thread, this.#concurrency, place);
      const jobNum = inflight[at + INFLIGHT_JOB_NUM]!;
      if (jobNum === 0) {
        sample.token = -1;
        continue;
      }
      const token = inflight[at + INFLIGHT_TOKEN]!;
      const words = this.#words;
      const p = progressAt(thread, this.#concurrency, place);
      // Pairs with the thread's store of REPORTS after VALUE (ProgressPlace#report): the value read is that report's or a later one's.
      const reports = Atomics.load(words, p + PROGRESS_REPORTS);
      const valueBits = Atomics.load(words, p + PROGRESS_VALUE);
      // The place moved on to another job while we read: its reports are not this token's. Look again next tick.
      if (inflight[at + INFLIGHT_TOKEN] !== token || inflight[at + INFLIGHT_JOB_NUM] !== jobNum) continue;
      if (token !== sample.token) {
        // A job's first sample: its baseline. Reports counted before it may be the previous job's.
        sample.token = token;
        sample.reports = reports;
        sample.extendedAt = now;
        sample.unextended = false;
        continue;
      }
      if (reports !== sample.reports) {
        sample.reports = reports;
        sample.unextended = true;
        moved = true;
        heard?.({ jobId: jobIdOf(jobNum), attempt: inflight[at + INFLIGHT_ATTEMPT]!, progress: progressValueOf(valueBits) });
      }
      if (!sample.unextended || now - sample.extendedAt < this.#leaseMillis / 3) continue;
      sample.unextended = false;
      sample.extendedAt = now;
      this.#extend(jobIdOf(jobNum), token);
    }
    return moved;
  }

  #extend(jobId: string, token: number): void {
    try {
      const extended = this.#queue.extend(jobId, token, this.#leaseMillis);
      if (extended instanceof Promise) extended.catch(() => undefined);
    } catch {
      // Refused: the lease is over (the job ended, was cancelled, or expired): nothing to keep alive.
    }
  }
}
