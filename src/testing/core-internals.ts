/**
 * The one door from the shared-memory core to its own tests (test/core/,
 * test/fixtures/gate-worker.mjs, turns-racer-thread.mjs,
 * test/support/helpers.ts): the few internal classes and words those tests
 * look at, and hooks that run a test's code at a chosen point inside a move
 * of the core (a lock holder stalled there, a count of slot reads, a count of
 * lock takes). Other tests of the queue use the public API; the
 * plain tables' unit tests (test/tables/) import each table's module.
 *
 * Not part of the public API: `leasehold/testing` (./index.ts) does not
 * export it and package.json's `exports` maps no name to it; the tests import
 * the built file by path (dist/testing/core-internals.js). It is built with
 * the rest of src/ because the fixture threads are plain .mjs run from dist/.
 *
 * Why one file: when a core file is renamed or moved, only the imports below
 * change, and no test does. It re-exports and wraps; it holds no behaviour of
 * the core. A hook wraps a method for the length of one `run` and puts it
 * back afterwards, thrown or not; it sees only this thread's calls.
 */
import { Filing } from '../shm/maintenance/filing.js';
import { Maintenance } from '../shm/maintenance/maintenance.js';
import type { QueueMemory } from '../shm/queue-memory.js';
import { ReadyIndex } from '../shm/tables/ready.js';
import { QueueLock } from '../shm/protocol/lock.js';
import { SlotTable } from '../shm/tables/slots.js';
import { RowTable } from '../shm/tables/rows.js';
import type { RetryPolicy } from '../policy.js';
import type { TimeSource } from '../clock.js';

export { QueueMemory } from '../shm/queue-memory.js';
export { QueueLock };
export { Arena } from '../shm/tables/arena.js';
export { Patience } from '../shm/protocol/patience.js';
export { LockLost } from '../shm/protocol/lock-held.js';
export {
  ATTENTION, CAPPED, DUE_LOWERED, GATE, HINTS_STALE, IDLE_WAITERS, LOCK_WORD_COUNT, PATIENCE, RATE_LIMITED, REBUILDS,
  ROW_CALL, ROW_OWNED, ROW_REVOKED, ROW_STATE, ROW_WORDS,
} from '../shm/memory/layout.js';

/** What a lock holder that is not a queue (a test's second view of the memory) runs under the lock. */
export interface HolderMaintenance {
  /** Re-derives the indexes from the slots, as a holder that took the lock over does; throws LockLost if the lock was taken from it meanwhile. */
  rebuild(now: number): void;
}

/** The locked maintenance of `memory`, with no retention limits and no journal: a second lock holder on a shared queue's memory. */
export function maintenanceOf(memory: QueueMemory, policy: RetryPolicy, time: TimeSource): HolderMaintenance {
  return new Maintenance(memory, policy, time, {}).rebuilder;
}

/** Where a lock holder puts a job after a move: `file` files the job by its new status, `push` pushes an entry onto one of the heaps. */
export type FilingStep = 'file' | 'push';

/**
 * Runs `run`; during it, `before` is called just before each `step` any lock
 * holder of this thread takes after its move was decided (the point where a
 * holder stalled past the queue's patience is taken over in
 * test/core/holder-taken-over.test.ts).
 */
export function beforeFilings<T>(step: FilingStep, before: () => void, run: () => T): T {
  return around(Filing.prototype, step, before, run);
}

/** Runs `run`; during it, `before(slot)` is called just before each job this thread files into a ready ring. */
export function beforeReadyFilings<T>(before: (slot: number) => void, run: () => T): T {
  return around(ReadyIndex.prototype, 'file', before, run);
}

/**
 * Runs `run`; during it, `before(row)` is called just before each lock-free
 * call of this thread leaves its row (RowTable#leave): after the call's moves
 * (a poll's claim among them), before it reads what it returns.
 */
export function beforeLockFreeCallsLeave<T>(before: (row: number) => void, run: () => T): T {
  return around(RowTable.prototype, 'leave', before, run);
}

/** How many slot words this thread read during `run` (a scan of the slots reads at least one per slot). */
export function slotReadsDuring(run: () => unknown): number {
  let reads = 0;
  const count = () => void reads++;
  around(SlotTable.prototype, 'word', count, () => around(SlotTable.prototype, 'settledWord', count, () => around(SlotTable.prototype, 'status', count, run)));
  return reads;
}

/** How many times this thread took (or tried to take) a queue's maintenance lock during `run`: each locked call, or a lock-free one that fell back to the lock, takes it once. */
export function lockTakesDuring(run: () => unknown): number {
  let takes = 0;
  const count = () => void takes++;
  around(QueueLock.prototype, 'acquire', count, () => around(QueueLock.prototype, 'tryAcquire', count, run));
  return takes;
}

/** Runs `run` with `target[name]` preceded by `before` (given the same arguments), then puts the method back. */
function around<O extends object, K extends keyof O & string, T>(target: O, name: K, before: (...args: never[]) => void, run: () => T): T {
  const built = target[name] as (...args: unknown[]) => unknown;
  Object.defineProperty(target, name, {
    configurable: true,
    writable: true,
    value(this: unknown, ...args: unknown[]) {
      (before as (...args: unknown[]) => void)(...args);
      return built.apply(this, args);
    },
  });
  try {
    return run();
  } finally {
    Object.defineProperty(target, name, { configurable: true, writable: true, value: built });
  }
}
