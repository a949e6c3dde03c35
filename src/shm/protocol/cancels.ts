import * as step from '../memory/steps.js';
import { CANCEL_NOTICES } from '../memory/layout.js';

/**
 * What tells a worker loop that a RUNNING job was cancelled, so that it can
 * abort that job's handler: CANCEL_NOTICES (layout.ts), counted by each such
 * cancel and watched by the loops of every thread.
 *
 * The handshake: a watcher reads the word, then sleeps on the value it read
 * (Atomics.waitAsync); a cancel counts the word after its move, then
 * notifies. A cancel counted after the read changes the word, so the sleep
 * returns at once or is woken: no notice made after `watch` began is missed.
 * A notice says only that some RUNNING job was cancelled; the watcher looks
 * at the jobs it runs (a view each) to find which. A loop with no cancel to
 * hear costs one armed waitAsync, nothing per job.
 */

/** The value a cancel returns from the core when it ended a lease (from RUNNING); 0 for a PENDING job. */
export const CANCELLED_RUNNING = 1;

/** After the cancel of a RUNNING job has returned (durable, with a journal): a notice to every watcher. Pairs with the read in `watchCancels`. */
export function announceCancel(lockWords: Int32Array): void {
  step.add(lockWords, CANCEL_NOTICES, 1);
  step.notify(lockWords, CANCEL_NOTICES);
}

/**
 * Calls `heard` once after each notice (several close together may come as
 * one) from now until the returned function is called. The sleep keeps no
 * event loop alive (Node does not, for a pending waitAsync); a stopped watch
 * leaves one waiter behind until the next notice.
 */
export function watchCancels(lockWords: Int32Array, heard: () => void): () => void {
  let stopped = false;
  // Read before the sleep: a notice counted from here on changes the word (the handshake above).
  let seen = Atomics.load(lockWords, CANCEL_NOTICES);
  const sleep = (): void => {
    const waiting = Atomics.waitAsync(lockWords, CANCEL_NOTICES, seen);
    const woke = (): void => {
      if (stopped) return;
      seen = Atomics.load(lockWords, CANCEL_NOTICES);
      sleep();
      heard();
    };
    if (waiting.async) void waiting.value.then(woke);
    else queueMicrotask(woke);
  };
  sleep();
  return () => {
    stopped = true;
  };
}
