import { laterReading, type TimeSource } from '../../clock.js';
import type { Filing } from './filing.js';
import type { HeldJobs } from './held-jobs.js';
import type { JobMoves } from '../moves/job-moves.js';
import { expireLease } from '../moves/fail.js';
import { promoteJob } from '../moves/promote.js';
import { ATTENTION, ENTRY_K1, ENTRY_SLOT, ENTRY_WORD, LEASE_UNTIL, REFILING, RUNNING, isBusy, statusOf } from '../memory/layout.js';
import * as step from '../memory/steps.js';
import { assertHeld } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { MoverHolder } from '../protocol/mover.js';
import type { Rebuilder } from './rebuild.js';

/**
 * Bringing the queue up to now, under the maintenance lock: leases due
 * expire (each a failed attempt at its leaseUntil), delayed jobs due become
 * ready, held jobs whose window opened are filed back; and, where a call
 * must see one instant's state, the lock-free calls in flight are waited
 * out (those of threads that died in one repaired) and the queue is brought
 * up to a clock reading taken after them.
 */
export class CatchUp {
  readonly #m: QueueMemory;
  /** The queue's clock, read again as a call settles (see `settle`). */
  readonly #time: TimeSource;
  /** Whether the queue has a journal: then every move is made under the lock, and there is no lock-free call to wait for. */
  readonly #journaled: boolean;
  readonly #filing: Filing;
  readonly #held: HeldJobs;
  /** An expiry is a failed attempt. */
  readonly #moves: JobMoves;
  readonly #rebuilder: Rebuilder;
  readonly #holder: MoverHolder;
  /** Whether a catch-up is waiting out lock-free calls for a lease they may have left lapsed (see `catchUp`). */
  #settling = false;
  /** The slots a catch-up found so (see `catchUp`), reused from call to call. */
  readonly #lapsed: number[] = [];

  constructor(
    memory: QueueMemory, time: TimeSource, journaled: boolean, filing: Filing, held: HeldJobs, moves: JobMoves, rebuilder: Rebuilder, holder: MoverHolder,
  ) {
    this.#m = memory;
    this.#time = time;
    this.#journaled = journaled;
    this.#filing = filing;
    this.#held = held;
    this.#moves = moves;
    this.#rebuilder = rebuilder;
    this.#holder = holder;
  }

  /**
   * Expires the leases due by `now` and makes the delayed jobs due by then
   * ready. A lease due whose job has moved on to another lease, one run out
   * by `now` as well, or is mid-move, was extended or claimed again by a
   * lock-free call still in flight, which registers the new lease only as it
   * ends: that call is waited for (see `settle`), and the new lease expired
   * then, so that this call sees it expired as every call after its end must
   * (keeps I18).
   */
  catchUp(now: number): void {
    const { slots } = this.#m;
    this.#filing.dueChanged();
    this.#filing.drainLeases();
    const lapsed = this.#lapsed;
    lapsed.length = 0;
    // While groups take turns, the jobs made ready below take their turns by runAt, not by heap (keeps I27).
    const byRunAt = this.#m.turns.taken;
    if (byRunAt) this.#filing.collectReady();
    try {
      this.#expireAndPromote(now, lapsed);
    } finally {
      // Also when a holder taken over leaves by LockLost: then nothing is filed (fileReady looks at the lock).
      if (byRunAt) this.#filing.fileCollected();
    }
    this.#held.release(now);
    // Those the loop above expired meanwhile (their new lease was registered too) need no wait. Once: the
    // catch-up of the settle below meets only leases made after the calls it waited for.
    if (!this.#settling && lapsed.some((slot) => this.#mayHaveLapsed(slot, slots.word(slot), now))) {
      this.#settling = true;
      try {
        this.settle(now);
      } finally {
        this.#settling = false;
      }
    }
  }

  /**
   * Expires the leases due by `now`, in leaseUntil order, and promotes the
   * delayed jobs due by then, in (runAt, submission) order; notes in `lapsed`
   * the slots whose lease may have run out unregistered (see `catchUp`).
   */
  #expireAndPromote(now: number, lapsed: number[]): void {
    const { slots, leases, delayed } = this.#m;
    while (leases.size > 0) {
      const slot = leases.top(ENTRY_SLOT);
      const word = leases.top(ENTRY_WORD);
      const until = leases.top(ENTRY_K1);
      const current = slots.word(slot);
      if (current === word && until > now) break;
      leases.pop();
      if (current === word) expireLease(this.#moves, slot, word, until, now);
      else if (this.#mayHaveLapsed(slot, current, now)) lapsed.push(slot);
    }
    while (delayed.size > 0) {
      const slot = delayed.top(ENTRY_SLOT);
      const word = delayed.top(ENTRY_WORD);
      const runAt = delayed.top(ENTRY_K1);
      if (slots.word(slot) === word && runAt > now) break;
      delayed.pop();
      if (slots.word(slot) !== word) continue;
      assertHeld(this.#m.lock);
      this.#filing.fileReady(slot, promoteJob(this.#holder.mover, slot, word));
    }
  }

  /** Whether the job in `slot`, its word `word` now, may hold a lease run out by `now` that no ring holds yet: mid-move, or RUNNING past its end. */
  #mayHaveLapsed(slot: number, word: number, now: number): boolean {
    return isBusy(word) || this.#runningPastEnd(slot, word, now);
  }

  /** Whether the job in `slot`, its word `word` (not BUSY), is RUNNING on a lease that has run out by `now`. */
  #runningPastEnd(slot: number, word: number, now: number): boolean {
    return statusOf(word) === RUNNING && !(now < this.#m.slots.get(slot, LEASE_UNTIL));
  }

  /**
   * Waits for lock-free calls in flight to leave (microseconds), and repairs
   * after threads that died in one (after `lockTimeoutMillis`); then brings
   * the queue up to a clock reading taken now. For a poll that found
   * nothing, for stats and the dead letters, for a slot that stays BUSY, for
   * a lease run out that no catch-up expired. True if it rebuilt or caught up
   * (the caller looks again).
   *
   * Why the new reading: lock-free calls that ended since this operation read
   * the clock (and those waited for) stamped their leases from readings of
   * their own (I17), perhaps later than this
   * operation's; what it sees must be one instant's state, with every lease
   * that has run out by then expired.
   */
  settle(now: number): boolean {
    // A journaled queue makes every move under the lock: no lock-free call to wait for.
    if (this.#journaled) return false;
    const { helping } = this.#m;
    const dead = helping.quiesce();
    if (dead.length > 0) {
      helping.revoke(dead);
      this.#rebuilder.rebuild(now, { fenceStale: true });
    }
    const later = laterReading(this.#time, now);
    this.#m.setLastNow(later);
    const due = dead.length > 0 || this.#m.dueBy(later);
    if (due) this.catchUp(later);
    return due;
  }

  /**
   * Makes `refile`, a move that keeps a READY job READY under a new word (an
   * edit), with lock-free polls held at the lock (keeps I26). Its CAS makes
   * the job's ready entry stale before the move files a new one; a
   * lock-free poll between the two would see the job nowhere and lease a
   * worse one, though the job was ready all along. So REFILING sends new
   * polls to the lock (which the caller holds) and the calls in flight are
   * waited out first (the Dekker pair of RowTable#enter, as for the gate):
   * each began before the move and ends before its CAS. Returns what
   * `refile` returns, or false with nothing moved if threads died inside a
   * call: the hints were rebuilt after them, with new words, and the caller
   * reads the job's word again.
   */
  refileReady(now: number, refile: () => boolean): boolean {
    // No lock-free poll on a journaled queue, nor another thread on an exclusive one.
    if (this.#journaled || this.#m.exclusive) return refile();
    const { helping, lockWords } = this.#m;
    // Seen by every poll that enters from here on (RowTable#enter reads ATTENTION after its odd CALL).
    step.or(lockWords, ATTENTION, REFILING);
    try {
      const dead = helping.quiesce();
      if (dead.length === 0) return refile();
      helping.revoke(dead);
      this.#rebuilder.rebuild(now, { fenceStale: true });
      return false;
    } finally {
      // Polls may go lock-free again: the job is filed. A holder taken over leaves the bit to its successor's rebuild.
      if (this.#m.lock.held()) step.and(lockWords, ATTENTION, ~REFILING);
    }
  }

  /**
   * Before a locked operation on `slot`: a RUNNING job whose lease has run
   * out by `now` was claimed or extended by a lock-free call still in flight
   * (the catch-up in Maintenance#prepare expired every lease registered), whose clock
   * read came before ours. The call is waited for and its lease expired, so
   * that this operation sees what every call must: the lease expired.
   */
  catchUpLapsed(slot: number, now: number): void {
    if (this.#runningPastEnd(slot, this.settledWord(slot, now), now)) this.settle(now);
  }

  /**
   * Waits until `slot` is not BUSY (its mover left its call, or died and was
   * finished for); its word. The locked calls that found a move to wait for
   * come here and try again: first they look at the lock, for a holder taken
   * for dead finds every look slow (a holder of an older time seems at work,
   * or maintenance due, that only the lock's present holder can settle) and
   * would loop without end (a livelock the stall histories found). They
   * look again after the read: a word read once a taker holds the lock may
   * be of the taker's moves (the job removed, say), which the call, started
   * again, must find as they are (keeps I13).
   */
  settledWord(slot: number, now: number): number {
    const lock = this.#m.lock;
    assertHeld(lock);
    const slots = this.#m.slots;
    let word = slots.settledWord(slot);
    assertHeld(lock);
    if (!isBusy(word)) return word;
    this.settle(now);
    word = slots.word(slot);
    if (!isBusy(word)) return word;
    // Busy still: a mover no watch covers (a revoked row's). The rebuild finishes it.
    this.#rebuilder.rebuild(now, { fenceStale: true });
    return slots.word(slot);
  }
}
