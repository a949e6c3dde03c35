import type { QueueLock } from './lock.js';

/** Thrown when a move finds our lock taken over: the caller retries the whole operation. */
export class LockLost extends Error {}

/** Shared writes outside the slot words (records, arena chains) first check that the lock is still ours (keeps I13). */
export function assertHeld(lock: QueueLock): void {
  if (!lock.held()) throw new LockLost();
}

/**
 * After a hint write that began with a look at the lock (a ring append, a
 * heap push: several stores each): a holder taken over in the middle of it
 * may have written over its successor's rebuild. It asks the next holder to
 * rebuild at once (keeps I12), not only at its release: a holder that takes
 * the lock in between would decide on what it wrote (a ready job lost from
 * the rings, and a poll that finds nothing).
 */
export function repairIfTakenOver(lock: QueueLock): void {
  if (!lock.held()) lock.passOnRepair();
}

/** Inside a long scan, now and then shows the waiters that this holder is alive. */
export function showProgress(lock: QueueLock, step: number): void {
  if ((step & 0xfff) === 0 && !lock.touch()) throw new LockLost();
}
