import type { FinishWatch } from '../finished.js';
import { FINISH_TICKET, FINISH_WAITERS } from './layout.js';

/**
 * The word `finished(jobId)` sleeps on: FINISH_TICKET, which every move into
 * SUCCEEDED, DEAD or CANCELLED counts up (its other role is the eviction
 * order, see layout.ts), and FINISH_WAITERS, the sleepers on it.
 *
 * The handshake: a waiter registers (FINISH_WAITERS + 1), reads the ticket,
 * then looks at its job; a mover counts the ticket, makes its move, then
 * reads FINISH_WAITERS. Either the waiter's look sees the move, or its sleep
 * on the ticket it read starts after the count (and returns at once) or before
 * the mover's read of FINISH_WAITERS (which then notifies it). A mover pays
 * the count it needs anyway and one load; the notify only while someone waits.
 */
export class Finishes {
  readonly #words: Int32Array;

  constructor(words: Int32Array) {
    this.#words = words;
  }

  /** Counts a move into a finished status, just before it is made; its ticket (FINISH_SEQ is FINISH_BASE + ticket). */
  count(): number {
    // The eviction order, and the change a sleeping `finished` wakes for: one shared counter for every thread.
    return (Atomics.add(this.#words, FINISH_TICKET, 1) >>> 0) + 1;
  }

  /** After a counted move (or a rebase of the ticket): wakes the waiters, if there are any. */
  announce(): void {
    // Ordered after the count and the move's CAS (all seq-cst): a waiter registered before it is seen here.
    if (Atomics.load(this.#words, FINISH_WAITERS) > 0) Atomics.notify(this.#words, FINISH_TICKET);
  }

  /** Registers one more waiter (undone by `leave`); from now on every finishing move notifies. */
  enter(): void {
    // Before the ticket is read: see the handshake above.
    Atomics.add(this.#words, FINISH_WAITERS, 1);
  }

  leave(): void {
    // This waiter is gone: movers stop notifying once none is left.
    Atomics.sub(this.#words, FINISH_WAITERS, 1);
  }

  /** The ticket now, read after `enter` and before the waiter looks at its job. */
  ticket(): number {
    // Seq-cst after the registration: pairs with the mover's count, then its load of FINISH_WAITERS.
    return Atomics.load(this.#words, FINISH_TICKET);
  }

  /** Resolves once the ticket has moved from `seen` (or a notify came: a rebase, or `wake`). */
  async sleep(seen: number): Promise<void> {
    // Sleeps only while the ticket still holds `seen`: a finish counted since it was read returns at once.
    const waiting = Atomics.waitAsync(this.#words, FINISH_TICKET, seen);
    if (waiting.async) await waiting.value;
  }

  /** Wakes every sleeper (they look again): how a waiter that times out or is aborted ends its own sleep. */
  wake(): void {
    // A spurious wake for the others, who look at their jobs and sleep again.
    Atomics.notify(this.#words, FINISH_TICKET);
  }
}

/**
 * `finished`'s watch over shared memory (see untilFinished): one
 * registration, a fresh ticket before each look. It does not sleep once
 * `closed()` (this thread's queue was closed: its close wakes those asleep),
 * so the next look is told.
 */
export function finishWatch(finishes: Finishes, closed: () => boolean): FinishWatch {
  let entered = false;
  let seen = 0;
  return {
    arm() {
      if (!entered) finishes.enter();
      entered = true;
      seen = finishes.ticket();
    },
    async changed(stop) {
      if (closed()) return;
      // Ends our own sleep (Atomics.waitAsync takes no signal): everyone wakes, the others sleep again.
      const wake = () => finishes.wake();
      stop.addEventListener('abort', wake, { once: true });
      try {
        await finishes.sleep(seen);
      } finally {
        stop.removeEventListener('abort', wake);
      }
    },
    close() {
      if (entered) finishes.leave();
      entered = false;
    },
  };
}
