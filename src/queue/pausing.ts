import { step, PAUSED } from '../shm/core.js';
import type { QueueContext } from './context.js';

/**
 * Pause and resume of one JobQueue instance. The state is one lock word
 * (PAUSED) that every thread's polls read, and, with a journal, a meta row,
 * so that a paused queue is paused again after a reopen.
 */
export class Pausing {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /**
   * Sets the state under the lock, so that two threads pausing and resuming
   * at once leave the journal and the word agreeing. The journal is written
   * first: if it refuses, nothing changed.
   */
  set(paused: boolean): void {
    const ctx = this.#ctx;
    ctx.locked(() => {
      ctx.journal?.journal.setPaused(paused);
      // Seen by every poll from here on (a poll reads it before it looks for work).
      step.store(ctx.memory.lockWords, PAUSED, paused ? 1 : 0);
    });
    // Workers asleep in waitForWork poll again.
    if (!paused) ctx.memory.signal.bump();
  }

  isPaused(): boolean {
    this.#ctx.assertOpen();
    // A read of the state as it is now, by any thread.
    return step.load(this.#ctx.memory.lockWords, PAUSED) === 1;
  }
}
