import type { QueueLock } from './lock.js';

/** Thrown when a move finds our lock taken over: the caller retries the whole operation. */
export class LockLost extends Error {}

/** Shared writes outside the slot words (records, arena chains) first check that the lock is still ours (keeps I13). */
export function assertHeld(lock: QueueLock): void {
  if (!lock.held()) throw new LockLost();
}

/** Inside a long scan, now and then shows the waiters that this holder is alive. */
export function showProgress(lock: QueueLock, step: number): void {
  if ((step & 0xfff) === 0 && !lock.touch()) throw new LockLost();
}
