import type { PendingEdit } from '../shm/core.js';
import { parseJobId } from '../validate/job-id.js';
import { checkDelay, checkPayload, type CheckedPayload } from '../validate/pending-edits.js';
import type { Payload } from '../types.js';
import { checkPriority } from '../validate/job-input.js';
import type { QueueContext } from './context.js';

/**
 * The edits of a PENDING job of one JobQueue instance: changePriority,
 * changeDelay, promote, updatePayload. Each is one move under the
 * maintenance lock (Maintenance#edit, moves/edit.ts), refused with
 * IllegalStateError on any other status; with a journal, durable when it
 * returns. Arguments are checked first, then the job id, then its state.
 */
export class PendingEdits {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  changePriority(jobId: string, priority: number): void {
    checkPriority(priority);
    this.#edit(jobId, { priority });
  }

  changeDelay(jobId: string, delayMillis: number): void {
    checkDelay(delayMillis);
    this.#edit(jobId, { delay: delayMillis });
  }

  promote(jobId: string): void {
    this.#edit(jobId, { delay: 0, earlier: true });
  }

  updatePayload(jobId: string, payload: Payload | null | undefined): void {
    const checked = checkPayload(payload, this.#ctx.options.maxPayloadBytes);
    this.#edit(jobId, {}, checked);
  }

  #edit(jobId: string, edit: PendingEdit, payload?: CheckedPayload): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    // A fresh edit per run of the locked call: the core fills in the new payload's chain.
    ctx.withJob(jobId, parseJobId(jobId), (core, slot, now) => core.edit(slot, { ...edit }, payload, now));
    // A job made ready (promote, a shorter delay, a higher priority) wakes idle workers.
    ctx.memory.signal.bump();
  }
}
