/**
 * Batched completes for a pool thread whose queue takes them in one call
 * (Redis's completeManyAndPoll): the jobs that finish while one batch is on
 * its way wait for the next, and each batch also leases the jobs that fill
 * the places it frees. A thread running `concurrency` short jobs so makes
 * about one round trip per `concurrency` jobs, not one per job; each lease
 * is still checked by its own token, and each new one counts its attempt.
 */
import type { Completion, BatchOutcome } from '../redis/queue.js';
import type { Lease } from '../types.js';
import { MAX_BATCH } from '../validate/lease.js';

/** The batched half of a WorkerQueue (see backend.ts). */
export interface BatchingQueue {
  completeManyAndPoll(done: readonly Completion[], workerId: string, leaseMillis: number, max: number): Promise<BatchOutcome>;
}

/** What the batches need from their thread's loop. */
export interface BatchOwner {
  readonly workerId: string;
  readonly leaseMillis: number;
  /** How many more jobs the thread may lease now (the batch's own jobs not counted: their places free once it ends). */
  free(): number;
  stopping(): boolean;
  /** Holds `count` places for leases on their way, or gives them back (negative). */
  reserve(count: number): void;
  /** Runs a lease the batch took. */
  start(lease: Lease): void;
}

interface Waiting {
  readonly completion: Completion;
  accepted(): void;
  refused(error: unknown): void;
}

export class BatchedCompletions {
  readonly #queue: BatchingQueue;
  readonly #owner: BatchOwner;
  readonly #waiting: Waiting[] = [];
  #flushing: Promise<void> | undefined;

  constructor(queue: BatchingQueue, owner: BatchOwner) {
    this.#queue = queue;
    this.#owner = owner;
  }

  /**
   * Settles once a batch has completed the lease with `result` (undefined:
   * none): resolves if accepted, rejects with the refusal (or the call's
   * failure) otherwise.
   */
  complete(lease: Lease, result: unknown): Promise<void> {
    return new Promise((accepted, refused) => {
      this.#waiting.push({ completion: { jobId: lease.jobId, token: lease.token, result }, accepted, refused });
      // After this turn of the event loop, so that every job finishing in it joins the batch.
      this.#flushing ??= new Promise((resolve) => setImmediate(resolve)).then(() => this.#flush());
    });
  }

  /** Resolves once no batch is on its way (and the leases of the last one are started). */
  get settled(): Promise<void> | undefined {
    return this.#flushing;
  }

  /** Sends the waiting completes, then those that came meanwhile, one batch at a time. */
  async #flush(): Promise<void> {
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, MAX_BATCH);
      const owner = this.#owner;
      const max = owner.stopping() ? 0 : Math.min(MAX_BATCH, Math.max(0, owner.free() + batch.length));
      owner.reserve(max);
      let outcome: BatchOutcome;
      try {
        outcome = await this.#queue.completeManyAndPoll(batch.map((job) => job.completion), owner.workerId, owner.leaseMillis, max);
      } catch (error) {
        owner.reserve(-max);
        for (const job of batch) job.refused(error);
        continue;
      }
      owner.reserve(-max);
      for (const lease of outcome.leases) owner.start(lease);
      const refusals = new Map(outcome.refused.map(({ jobId, error }) => [jobId, error]));
      for (const job of batch) {
        const refusal = refusals.get(job.completion.jobId);
        if (refusal === undefined) job.accepted();
        else job.refused(refusal);
      }
    }
    this.#flushing = undefined;
  }
}
