import * as step from '../memory/steps.js';
import { FinishWaits, type FinishWatch } from '../../finished.js';
import type { WordAccess } from '../memory/access.js';
import { parseJobId } from '../../validate/job-id.js';
import { DELAYED, FINISH_NOTICES, FINISH_TICKET, FINISH_WAITERS, READY, RUNNING, isBusy, statusOf } from '../memory/layout.js';
import type { QueueMemory } from '../queue-memory.js';
import type { TimeSource } from '../../clock.js';
import { NOT_MAPPED } from '../tables/jobmap.js';

/**
 * The words `finished(jobId)` sleeps on: FINISH_NOTICES, which a move into
 * SUCCEEDED, DEAD or CANCELLED counts after it is made while someone waits,
 * and FINISH_WAITERS, the sleepers. (FINISH_TICKET, which every such move
 * counts just before it, is the eviction order; see layout.ts.)
 *
 * The handshake: a sleeper registers (FINISH_WAITERS + 1), reads
 * FINISH_NOTICES, then looks at jobs; a mover makes its move, then reads
 * FINISH_WAITERS and, if > 0, counts FINISH_NOTICES and notifies. All
 * sequentially consistent: if a look missed the move, the mover's read of
 * FINISH_WAITERS came after the registration, so it counts the notice after
 * the sleeper read it, and the sleep on the value read returns at once or is
 * woken. A mover with nobody waiting pays one load.
 */
export class Finishes {
  readonly #words: Int32Array;
  readonly #access: WordAccess;

  constructor(words: Int32Array, access: WordAccess) {
    this.#words = words;
    this.#access = access;
  }

  /** Counts a move into a finished status, just before it is made; its ticket (FINISH_SEQ is FINISH_BASE + ticket). */
  count(): number {
    // The eviction order: one shared counter, so that finishes of every thread compare.
    return (this.#access.add(this.#words, FINISH_TICKET, 1) >>> 0) + 1;
  }

  /** After a finishing move (or a rebase of the ticket): a notice to the sleepers, if there are any. */
  announce(): void {
    // Ordered after the move's CAS (all seq-cst): a sleeper registered before the move is seen here.
    if (this.#access.load(this.#words, FINISH_WAITERS) === 0) return;
    // After the move: a sleeper that read the old count and missed the move returns from its sleep.
    step.add(this.#words, FINISH_NOTICES, 1);
    step.notify(this.#words, FINISH_NOTICES);
  }

  /** Registers one more sleeper (undone by `leave`); from now on every finishing move notifies. */
  enter(): void {
    // Before the notices are read: see the handshake above.
    step.add(this.#words, FINISH_WAITERS, 1);
  }

  leave(): void {
    // This sleeper is gone: movers stop notifying once none is left.
    step.sub(this.#words, FINISH_WAITERS, 1);
  }

  /** The notices so far, read after `enter` and before the sleeper looks at its jobs. */
  notices(): number {
    return step.load(this.#words, FINISH_NOTICES);
  }

  /** Resolves once a notice came after `seen` was read. */
  async sleep(seen: number): Promise<void> {
    // Sleeps only while the count still holds `seen`: a notice counted since it was read returns at once.
    const waiting = Atomics.waitAsync(this.#words, FINISH_NOTICES, seen);
    if (waiting.async) await waiting.value;
  }
}

/**
 * One JobQueue instance's `finished` waits over shared memory, all asleep on
 * one Atomics.waitAsync of FINISH_NOTICES: a finish anywhere wakes that
 * sleeper once, and it wakes only the waits whose job `mayHaveFinished` says
 * may have (each then looks at its job, under the lock), rather than every
 * wait of the instance. With N waits and N finishes that is N looks, not N².
 */
export class SharedFinishWaits {
  readonly #finishes: Finishes;
  readonly #memory: QueueMemory;
  readonly #time: TimeSource;
  readonly #waits = new FinishWaits(() => this.#startSleeper());
  /** Whether the sleeper runs (registered in FINISH_WAITERS). It stops itself once no wait is left, or at close. */
  #sleeping = false;
  /** After close: the sleeper stops when it next wakes, and none starts again (a wait's look is told the queue is closed). */
  #closed = false;

  constructor(memory: QueueMemory, time: TimeSource) {
    this.#finishes = memory.finishes;
    this.#memory = memory;
    this.#time = time;
  }

  watch(jobId: string): FinishWatch {
    return this.#waits.watch(jobId);
  }

  /** The queue closed: the sleeper stops, and every wait looks again (and is told so). */
  close(): void {
    this.#closed = true;
    this.#stopSleeper();
    this.#waits.wakeAll();
  }

  #startSleeper(): void {
    if (this.#sleeping || this.#closed) return;
    this.#sleeping = true;
    // Registered before the arming wait's look (the handshake above): every finish from now on notifies.
    this.#finishes.enter();
    void this.#sleep(this.#finishes.notices());
  }

  async #sleep(seen: number): Promise<void> {
    for (;;) {
      await this.#finishes.sleep(seen);
      if (this.#closed) return;
      // Read before the looks: a finish they miss counts a notice after this read, and the next sleep returns at once.
      seen = this.#finishes.notices();
      const now = this.#now();
      for (const jobId of this.#waits.jobs()) if (mayHaveFinished(this.#memory, jobId, now)) this.#waits.wake(jobId);
      // Every wait has ended: the movers need not notify for this instance any more.
      if (this.#waits.size === 0) return this.#stopSleeper();
    }
  }

  /** The time, or NaN for a clock that fails (then every lease may have run out: those waits look, and are told). */
  #now(): number {
    try {
      return this.#time.now();
    } catch {
      return NaN;
    }
  }

  #stopSleeper(): void {
    if (!this.#sleeping) return;
    this.#sleeping = false;
    this.#finishes.leave();
  }
}

/**
 * Whether job `jobId` may have finished (or lapsed, or gone) by `now`, read
 * without the lock: false only for a job seen PENDING, or RUNNING on a lease
 * that has not run out by `now` (NaN: unknown). Anything it cannot tell (a bad id, a slot moving or
 * reused, no map entry) is true: the wait's own look decides.
 */
export function mayHaveFinished(memory: QueueMemory, jobId: string, now: number): boolean {
  let jobNum: number;
  try {
    jobNum = parseJobId(jobId);
  } catch {
    return true;
  }
  const { jobMap, slots } = memory;
  const slot = jobMap.get(jobNum);
  if (slot === NOT_MAPPED) return true;
  const word = slots.word(slot);
  if (isBusy(word) || slots.jobNums[slot] !== jobNum) return true;
  const status = statusOf(word);
  if (status === READY || status === DELAYED) return false;
  return status !== RUNNING || !(now < slots.leaseUntils[slot]!);
}
