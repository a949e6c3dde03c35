import * as step from '../memory/steps.js';
import type { WordAccess } from '../memory/access.js';
import { startTimer } from '../../long-timer.js';
import { IDLE_WAITERS, WORK_SIGNAL } from '../memory/layout.js';

/**
 * Wakes idle workers when work arrives, at most once per idle spell rather
 * than once per job: a wake costs microseconds, a counter bump nanoseconds.
 *
 * A worker reads the counter *before* it polls and sleeps only if the counter
 * still holds that value, so a job submitted between its empty poll and its
 * sleep is never missed.
 */
export class WorkSignal {
  readonly #words: Int32Array;
  readonly #access: WordAccess;

  constructor(words: Int32Array, access: WordAccess) {
    this.#words = words;
    this.#access = access;
  }

  /** The counter's value now; pass it to `wait` after an empty poll. */
  current(): number {
    return this.#access.load(this.#words, WORK_SIGNAL);
  }

  /** Work may be ready: bump the counter, and wake the sleepers if there are any. */
  bump(): void {
    const access = this.#access;
    access.add(this.#words, WORK_SIGNAL, 1);
    // After the bump: a sleeper that read the old count before it registered is woken (or never sleeps).
    if (access.load(this.#words, IDLE_WAITERS) > 0) step.notify(this.#words, WORK_SIGNAL);
  }

  /**
   * As `wait`, but blocks this thread (Atomics.wait) instead of resolving
   * through its event loop: a wake reaches a blocked thread in microseconds,
   * while a resolved waitAsync first waits for the event loop to turn (about
   * 100 µs more per wake on a loaded 2-core machine). Nothing else runs in
   * this thread meanwhile: for a thread with nothing else to do.
   */
  block(seen: number, timeoutMillis: number): boolean {
    step.add(this.#words, IDLE_WAITERS, 1);
    try {
      return step.wait(this.#words, WORK_SIGNAL, seen, timeoutMillis) !== 'timed-out';
    } finally {
      step.sub(this.#words, IDLE_WAITERS, 1);
    }
  }

  /** Sleeps until `bump` moves the counter from `seen`, or `timeoutMillis` pass. True if woken by a bump. */
  async wait(seen: number, timeoutMillis: number): Promise<boolean> {
    step.add(this.#words, IDLE_WAITERS, 1);
    // Node keeps no event loop alive for a pending Atomics.waitAsync, even one with a timeout: a thread
    // whose only work is this wait would end with its top-level await unsettled (exit code 13). A timer
    // for as long keeps it alive, as a sleep would.
    const keepAlive = startTimer(() => {}, timeoutMillis);
    try {
      const result = Atomics.waitAsync(this.#words, WORK_SIGNAL, seen, timeoutMillis);
      const outcome = result.async ? await result.value : result.value;
      return outcome !== 'timed-out';
    } finally {
      keepAlive.clear();
      step.sub(this.#words, IDLE_WAITERS, 1);
    }
  }
}
