/**
 * The main thread's side of `ctx.progress()`: it samples the progress words
 * of every inflight place (layout.ts: REPORTS, VALUE) on the watchdog's tick,
 * and while a place's job keeps reporting it extends that job's lease on its
 * behalf, at most every third of `leaseMillis` — so a synchronous handler
 * that reports is not taken for hung, and one that stops reporting loses its
 * lease as it would without progress. The value sampled is written to the
 * job through the queue's `progress` (view(id).progress), at most once per
 * tick per job: a handler's tight loop of reports costs the queue nothing
 * more. A value reported just before the handler returns may not be
 * sampled before the job ends; the job then keeps the last one sampled.
 *
 * Fencing: a place runs one job after another, and its REPORTS word counts
 * across them. A job's first sample counts from BASE, REPORTS as the job
 * began, once LEASE names the token read (layout.ts); later samples count
 * from the previous one, while the place still holds the same TOKEN after
 * REPORTS was read. So reports of the job before never count for the next
 * job, and an extend or a progress write names the token it read, which the
 * queue refuses once that lease is over (a job that ended).
 */
import { jobIdOf } from '../job-id.js';
import type { PoolQueue } from './backend.js';
import { progressValueOf } from './job-context.js';
import {
  INFLIGHT_ATTEMPT, INFLIGHT_JOB_NUM, INFLIGHT_TOKEN, PROGRESS_BASE, PROGRESS_LEASE, PROGRESS_REPORTS, PROGRESS_VALUE, inflightAt, leaseWordOf, progressAt,
} from './layout.js';

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
  readonly #queue: Pick<PoolQueue, 'extend' | 'progress'>;
  readonly #inflight: Float64Array;
  readonly #words: Int32Array;
  readonly #concurrency: number;
  readonly #leaseMillis: number;
  readonly #samples: PlaceSample[];

  constructor(queue: Pick<PoolQueue, 'extend' | 'progress'>, inflight: Float64Array, progress: SharedArrayBuffer, threads: number, concurrency: number, leaseMillis: number) {
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
      const first = token !== sample.token;
      // A job's first sample counts from BASE, once LEASE names its token: pairs with ProgressPlace#begin (LEASE after BASE).
      if (first && Atomics.load(words, p + PROGRESS_LEASE) !== leaseWordOf(token)) continue;
      const base = first ? Atomics.load(words, p + PROGRESS_BASE) : sample.reports;
      // Pairs with the thread's store of REPORTS after VALUE (ProgressPlace#report): the value read is that report's or a later one's.
      const reports = Atomics.load(words, p + PROGRESS_REPORTS);
      const valueBits = Atomics.load(words, p + PROGRESS_VALUE);
      // The place moved on to another job while we read: its reports are not this token's. Look again next tick.
      if (inflight[at + INFLIGHT_TOKEN] !== token || inflight[at + INFLIGHT_JOB_NUM] !== jobNum) continue;
      if (first) {
        sample.token = token;
        sample.reports = base;
        sample.extendedAt = now;
        sample.unextended = false;
      }
      if (reports !== sample.reports) {
        sample.reports = reports;
        sample.unextended = true;
        moved = true;
        const jobId = jobIdOf(jobNum);
        const progress = progressValueOf(valueBits);
        this.#write(jobId, token, progress);
        heard?.({ jobId, attempt: inflight[at + INFLIGHT_ATTEMPT]!, progress });
      }
      if (!sample.unextended || now - sample.extendedAt < this.#leaseMillis / 3) continue;
      sample.unextended = false;
      sample.extendedAt = now;
      this.#extend(jobIdOf(jobNum), token);
    }
    return moved;
  }

  /** Keeps the value sampled on the job (view(id).progress), under the token read with it. */
  #write(jobId: string, token: number, progress: number): void {
    try {
      const written = this.#queue.progress(jobId, token, progress);
      if (written instanceof Promise) written.catch(() => undefined);
    } catch {
      // Refused: the lease is over (the job ended, was cancelled, or expired); the job keeps what was written before.
    }
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
