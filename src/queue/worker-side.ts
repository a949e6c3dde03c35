import { JournalWriteError, refusalError } from '../errors.js';
import { AWAITS_COMMIT, COMPLETE_ATTENTION, COMPLETE_POLL_ATTENTION, LockLost, type Maintenance, NOT_MAPPED, NOTHING_READY, PAUSED, POLL_ATTENTION, POLL_FROZEN, SLOW, UNREAD, WORKER_ATTENTION } from '../shm/core.js';
import type { Lease } from '../types.js';
import { parseJobId } from '../validate/job-id.js';
import { checkLeaseMillis, checkWorkerId } from '../validate/lease.js';
import { storedResult, type StoredResult } from '../validate/outcome.js';
import { checkProgress } from '../validate/progress.js';
import type { QueueContext } from './context.js';

/** What a locked poll after the call's own move returns when its holder was taken for dead before it leased anything: poll anew. */
const POLL_AGAIN = Symbol('poll again');

/** What WorkerSide holds as the last worker id it checked before any poll: no id a caller passes. */
const NONE_CHECKED = Symbol('no worker id checked yet');

/**
 * The worker calls of one JobQueue instance: poll, complete, extend,
 * progress, completeAndPoll (fail and release re-enqueue, so they run under the lock).
 *
 * Each call first tries the lock-free path: when the queue is in memory,
 * this instance owns a row, and no maintenance is due (`now` before
 * NEXT_DUE, not before the last maintenance, ATTENTION clear), the call runs
 * inside its row's CALL window and its moves race the other threads' by CAS.
 * Otherwise — or when the lock-free path meets what only the lock can settle
 * (a slot that stays BUSY, a job the map does not show, an empty poll, which
 * must look for jobs a dead thread left half-moved) — it runs under the lock.
 */
export class WorkerSide {
  readonly #ctx: QueueContext;
  /** The work signal as the last poll started (see `waitForWork`). */
  signalSeen = 0;
  /** After a poll that found nothing: when the first job it passed over for its type's rate limit may run (Infinity: none). */
  windowOpensAt = Infinity;
  /** The worker id the last poll checked: a worker loop polls with one id, checked once. At first none (no argument is this symbol). */
  #workerId: unknown = NONE_CHECKED;
  /** Its number in the worker table, once this thread knows it (UNREAD: not yet; see NameTable#known). */
  #workerNumber = UNREAD;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  poll(workerId: string, leaseMillis: number): Lease | undefined {
    return this.#poll(workerId, leaseMillis, false);
  }

  /**
   * `poll` for a thread that a wake (`blockForWork`) has just roused: a lock-free look that finds no job ready in
   * the rings returns nothing, with no second look under the lock. A bump wakes every sleeper and all but one find
   * the job taken; the locked look of each waits out the lock-free calls in flight (the winner's claim among them)
   * holding the lock, which the next submit then waits for. What only that look finds (a job a dead thread left
   * mid-move, a lease run out unregistered) waits for this thread's next `poll`, or another's.
   * A queue whose polls need the lock (OVERFLOW, caps, rate limits, a journal) takes it as `poll` does.
   */
  pollAfterWake(workerId: string, leaseMillis: number): Lease | undefined {
    return this.#poll(workerId, leaseMillis, true);
  }

  #poll(workerId: string, leaseMillis: number, afterWake: boolean): Lease | undefined {
    this.#checkPoll(workerId, leaseMillis);
    const ctx = this.#ctx;
    if (this.#paused()) return undefined;
    const now = ctx.now();
    const worker = ctx.worker;
    const workerNumber = this.#numberOf(workerId);
    if (workerNumber !== UNREAD && this.#fastPath(now, POLL_ATTENTION)) {
      const slot = worker.pollLockFree(workerNumber, leaseMillis, now);
      ctx.memory.rows.leave(worker.row);
      if (slot >= 0) return ctx.core.records.lease(worker.draft, worker.leaseStrings);
      if (afterWake && slot === NOTHING_READY) return undefined;
    }
    return this.#pollUnderLock(workerId, leaseMillis);
  }

  /**
   * A poll under the lock. With a journal, one that meets a job frozen by a
   * commit in flight as the best ready job waits for that commit (leading it,
   * if no thread does: its caller may have died waiting) and looks again
   * (keeps I21). If that commit fails, the job is being undone
   * by its own caller: the poll has nothing to lease (a failing disk must not
   * make polls throw, nor loop on a job whose caller died).
   */
  #pollUnderLock(workerId: string, leaseMillis: number): Lease | undefined {
    const ctx = this.#ctx;
    for (;;) {
      const lease = ctx.locked((core, at) => this.#pollOnce(core, workerId, leaseMillis, at, false));
      if (lease !== AWAITS_COMMIT) return lease as Lease | undefined;
      try {
        ctx.makeDurable(ctx.core.notes.awaitedTicket());
      } catch (error) {
        if (error instanceof JournalWriteError) return undefined;
        throw error;
      }
    }
  }

  /**
   * A locked poll: its lease, undefined, or AWAITS_COMMIT (the best ready job
   * is frozen). A holder taken for dead meanwhile (LockLost) has leased
   * nothing: a claim, once decided, stands and is reported (relies on
   * I13). So the call starts again — unless a move of the
   * call's own was made before the poll (`afterOwnMove`: completeAndPoll's
   * complete, which a second run would find made, and refuse): then, as for
   * a frozen job, POLL_AGAIN, and the caller polls anew.
   */
  #pollOnce(core: Maintenance, workerId: string, leaseMillis: number, now: number, afterOwnMove: boolean): Lease | undefined | typeof POLL_AGAIN | typeof AWAITS_COMMIT {
    try {
      const lease = this.#pollLocked(core, workerId, leaseMillis, now);
      return afterOwnMove && lease === AWAITS_COMMIT ? POLL_AGAIN : lease;
    } catch (error) {
      if (afterOwnMove && error instanceof LockLost) return POLL_AGAIN;
      throw error;
    }
  }

  /** A poll under the lock; one that finds nothing first waits out lock-free calls in flight and repairs after dead ones. */
  #pollLocked(core: Maintenance, workerId: string, leaseMillis: number, now: number): Lease | undefined | typeof AWAITS_COMMIT {
    const ctx = this.#ctx;
    const workerNumber = ctx.memory.workerNames.numberOf(workerId);
    for (let tries = 0; ; tries++) {
      const worker = ctx.prepareWorker();
      const slot = worker.pollLocked(workerNumber, leaseMillis, now);
      if (slot >= 0) return core.records.lease(worker.draft, worker.leaseStrings);
      if (slot === POLL_FROZEN) return AWAITS_COMMIT;
      this.windowOpensAt = core.held.heldUntil();
      if (tries > 0 || !core.catchUp.settle(now)) return undefined;
    }
  }

  /**
   * Marks the job SUCCEEDED. A complete with a result (its JSON text, checked
   * first: a refused one changes nothing) runs under the lock, as the arena
   * is the holder's; one without keeps the lock-free path.
   */
  complete(jobId: string, token: number, result?: unknown): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const jobNum = parseJobId(jobId);
    if (result !== undefined) {
      this.#completeUnderLock(jobId, jobNum, token, storedResult(result, ctx.options.maxResultBytes, ctx.options.maxPayloadBytes));
      return;
    }
    const refused = this.#fastComplete(jobNum, token, ctx.now());
    if (refused === 0) return;
    if (refused !== SLOW) throw refusalError(refused, jobId, ctx.options.capacity);
    this.#completeUnderLock(jobId, jobNum, token, null);
  }

  /** Kept out of `complete`: a closure there would make every call allocate the context it captures. */
  #completeUnderLock(jobId: string, jobNum: number, token: number, text: StoredResult | null): void {
    this.#ctx.withJob(jobId, jobNum, (core, slot, at) => this.#completeLocked(core, slot, jobNum, token, at, text));
  }

  /**
   * A worker loop's step: `complete(jobId, token)`, then `poll(workerId, leaseMillis)`,
   * in one lock-free call (or one locked call). If the complete is refused, nothing is polled.
   */
  completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number, result?: unknown): Lease | undefined {
    this.#checkPoll(workerId, leaseMillis);
    if (this.#paused()) {
      this.complete(jobId, token, result);
      return undefined;
    }
    const ctx = this.#ctx;
    const jobNum = parseJobId(jobId);
    const text = result === undefined ? null : storedResult(result, ctx.options.maxResultBytes, ctx.options.maxPayloadBytes);
    const now = ctx.now();
    const worker = ctx.worker;
    const workerNumber = this.#numberOf(workerId);
    // With a result: under the lock (see complete).
    // Once the queue has flows, under the lock: a child's complete counts down its parent there (relies on I28).
    if (text === null && workerNumber !== UNREAD && this.#fastPath(now, COMPLETE_POLL_ATTENTION)) {
      const slot = ctx.memory.jobMap.get(jobNum);
      const refused = slot === NOT_MAPPED ? SLOW : worker.complete(slot, jobNum, token, now);
      const next = refused === 0 && worker.ready() ? worker.pollLockFree(workerNumber, leaseMillis, now) : -1;
      ctx.memory.rows.leave(worker.row);
      if (next >= 0) return ctx.core.records.lease(worker.draft, worker.leaseStrings);
      if (refused !== 0 && refused !== SLOW) throw refusalError(refused, jobId, ctx.options.capacity);
      // Completed, and nothing ready lock-free: the locked poll looks further.
      if (refused === 0) return this.#pollUnderLock(workerId, leaseMillis);
    }
    const lease = ctx.withJob(jobId, jobNum, (core, slot, at) => {
      const refusal = this.#completeLocked(core, slot, jobNum, token, at, text);
      if (refusal < 0) return refusal;
      return this.#pollOnce(core, workerId, leaseMillis, at, true);
    }) as Lease | undefined | typeof POLL_AGAIN;
    return lease === POLL_AGAIN ? this.#pollUnderLock(workerId, leaseMillis) : lease;
  }

  extend(jobId: string, token: number, leaseMillis: number): number {
    const ctx = this.#ctx;
    ctx.assertOpen();
    checkLeaseMillis(leaseMillis);
    const jobNum = parseJobId(jobId);
    const now = ctx.now();
    if (this.#fastPath(now, WORKER_ATTENTION)) {
      const slot = ctx.memory.jobMap.get(jobNum);
      const result = slot === NOT_MAPPED ? SLOW : ctx.worker.extendLockFree(slot, jobNum, token, leaseMillis, now);
      ctx.memory.rows.leave(ctx.worker.row);
      if (result === 0) return ctx.worker.extendedUntil;
      if (result !== SLOW) throw refusalError(result, jobId, ctx.options.capacity);
    }
    // The end is read from the instance that made the move (a locked call may make this thread a new one).
    let worker = ctx.worker;
    ctx.withJob(jobId, jobNum, (core, slot, at) => {
      for (;;) {
        worker = ctx.prepareWorker();
        const result = worker.extendLocked(slot, jobNum, token, leaseMillis, at);
        if (result !== SLOW) return result;
        core.catchUp.settledWord(slot, at);
      }
    });
    return worker.extendedUntil;
  }

  /**
   * Sets the job's progress under the lease `token` (lock-free when no
   * maintenance is due, as extend); the lease keeps its end.
   */
  progress(jobId: string, token: number, value: number): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    checkProgress(value);
    const jobNum = parseJobId(jobId);
    const now = ctx.now();
    // A pool's main thread writes its jobs' progress and never polls: its row has no token, and needs none here.
    if (this.#fastPath(now, WORKER_ATTENTION, false)) {
      const slot = ctx.memory.jobMap.get(jobNum);
      const result = slot === NOT_MAPPED ? SLOW : ctx.worker.progress(slot, jobNum, token, value, now);
      ctx.memory.rows.leave(ctx.worker.row);
      if (result === 0) return;
      if (result !== SLOW) throw refusalError(result, jobId, ctx.options.capacity);
    }
    ctx.withJob(jobId, jobNum, (core, slot, at) => {
      for (;;) {
        const result = ctx.prepareWorker().progress(slot, jobNum, token, value, at);
        if (result !== SLOW) return result;
        core.catchUp.settledWord(slot, at);
      }
    });
  }

  /**
   * Records a failed attempt (under the lock: a retry is re-enqueued): the
   * job retries after its backoff, or is dead-lettered when no attempts are
   * left — or at once with `permanent`.
   */
  fail(jobId: string, jobNum: number, token: number, text: string | null, permanent: boolean): void {
    this.#ctx.withJob(jobId, jobNum, (core, slot, now) => core.fail(slot, token, text, permanent, now));
  }

  /** Hands a lease back unfinished: PENDING, ready `delayMillis` from now (0: at once), the attempt not counted (under the lock). */
  release(jobId: string, jobNum: number, token: number, delayMillis = 0): void {
    this.#ctx.withJob(jobId, jobNum, (core, slot, now) => core.release(slot, token, now, delayMillis));
  }

  /** A complete without the lock: 0, a Refusal, or SLOW (take the lock). */
  #fastComplete(jobNum: number, token: number, now: number): number {
    const ctx = this.#ctx;
    // Once the queue has flows, under the lock: a child's complete counts down its parent there (relies on I28).
    if (!this.#fastPath(now, COMPLETE_ATTENTION)) return SLOW;
    const slot = ctx.memory.jobMap.get(jobNum);
    const result = slot === NOT_MAPPED ? SLOW : ctx.worker.complete(slot, jobNum, token, now);
    ctx.memory.rows.leave(ctx.worker.row);
    return result;
  }

  /**
   * A complete under the lock; with `text`, the result's JSON text is stored
   * once the lease is known valid (a refused complete evicts nothing for it),
   * and freed again if the complete is refused after all.
   */
  #completeLocked(core: Maintenance, slot: number, jobNum: number, token: number, now: number, text: StoredResult | null = null): number {
    let resultRef = 0;
    if (text !== null) {
      const refused = core.checkLease(slot, token, now);
      if (refused < 0) return refused;
      resultRef = core.room.storeResult(text);
      if (resultRef < 0) return resultRef;
    }
    for (;;) {
      const outcome = this.#ctx.prepareWorker().complete(slot, jobNum, token, now, resultRef);
      if (outcome === SLOW) {
        core.catchUp.settledWord(slot, now);
        continue;
      }
      if (outcome < 0) core.room.freeCounted(resultRef);
      else core.completed(slot, now);
      return outcome;
    }
  }

  /**
   * Whether this call may run lock-free, and if so enters its row's CALL
   * window (the caller leaves it): in memory, a row of its own with a token
   * and ring room left, nothing due (looked at after ATTENTION, which
   * `enter` reads: relies on I11 and I14, see QueueMemory#nothingDueAt), and
   * ATTENTION still clear once NEXT_DUE is read: a holder's catch-up that ran
   * between the two reads raised its bits (a due job filed in the overflow
   * heap) before it published the NEXT_DUE this call then read (keeps I31).
   */
  #fastPath(now: number, attention: number, needsToken = true): boolean {
    const ctx = this.#ctx;
    if (!ctx.lockFree || !(needsToken ? ctx.worker.ready() : ctx.worker.hasRoom())) return false;
    const { rows } = ctx.memory;
    const row = ctx.worker.row;
    if (!rows.enter(row, attention)) return false;
    if (ctx.memory.nothingDueAt(now) && rows.attentionClear(attention)) return true;
    rows.leave(row);
    return false;
  }

  /**
   * Whether the queue is paused: a poll then hands out nothing (and does not
   * look at the queue). One plain load: the hot path's only cost of pausing.
   * A pause made before this poll began is seen: pause stores the word
   * atomically, and a caller that knows of the pause synchronized with it.
   */
  #paused(): boolean {
    return this.#ctx.memory.lockWords[PAUSED] !== 0;
  }

  /** The number of `workerId`, the id the last poll checked, in the worker table: UNREAD until this thread knows it (adding it needs the lock). */
  #numberOf(workerId: string): number {
    if (this.#workerNumber === UNREAD) this.#workerNumber = this.#ctx.memory.workerNames.known(workerId);
    return this.#workerNumber;
  }

  #checkPoll(workerId: string, leaseMillis: number): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    if (workerId !== this.#workerId) {
      checkWorkerId(workerId);
      this.#workerId = workerId;
      this.#workerNumber = UNREAD;
    }
    checkLeaseMillis(leaseMillis);
    // Read before polling: work that arrives after this point wakes `waitForWork`.
    this.signalSeen = ctx.memory.signal.current();
    this.windowOpensAt = Infinity;
  }
}
