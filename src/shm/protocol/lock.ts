import * as step from '../memory/steps.js';
import { ATOMIC_ACCESS, type WordAccess } from '../memory/access.js';
import { ATTENTION, COMMIT_LOCK, COMMIT_WAITERS, GATE, HINTS_STALE, LOCK, LOCK_WAITERS } from '../memory/layout.js';
import { Watch, type Patience } from './patience.js';

/** Where a lock's words are: the lock word, its sleepers' count, and the word a stalled holder marks on release (if any). */
export interface LockWords {
  lock: number;
  waiters: number;
  /** Where a holder found taken over on release sets GATE and HINTS_STALE. */
  attention?: number;
}
/** The queue lock: a stalled holder marks the hints stale and shuts the gate. */
export const QUEUE_LOCK: LockWords = { lock: LOCK, waiters: LOCK_WAITERS, attention: ATTENTION };
/** The commit leader's lock: a journal write is idempotent, so a stalled leader leaves nothing to repair. */
export const COMMIT_LEADER_LOCK: LockWords = { lock: COMMIT_LOCK, waiters: COMMIT_WAITERS };


/**
 * A lock on one Int32 word (the queue lock, or the commit leader's): 0 when free, else the holder's stamp.
 *
 * A thread can be killed (`worker.terminate()`) while it holds the lock. Then
 * nobody would ever release it, so a waiter that sees the *same* stamp for
 * the queue's patience (`lockTimeoutMillis`, see patience.ts) of its own
 * uninterrupted watching presumes the holder dead and takes the lock over
 * with a CAS from that stamp. The caller must then
 * repair what the dead holder may have left half-done (`acquire` returns
 * true). Stamps are unique per acquisition, so a lock that changes hands often
 * never looks stuck. A gap in the waiter's own watching (it was descheduled, or
 * the process was stopped) restarts the watch, so a waiter never blames a
 * holder for time in which it could not run either.
 *
 * A live holder taken for dead (stalled past the timeout) commits no slot
 * move once it has looked and found the lock gone (moves check `held()`
 * first; one it decided before stands, and its call reports it: keeps
 * I13), and on `release` it finds the lock gone, shuts the
 * gate of the lock-free calls and marks the hints stale (keeps I12), so the next holder
 * rebuilds them over whatever the stalled thread wrote before any lock-free
 * call uses them again, and raises the patience, so that a
 * machine whose threads wait that long for a core stops taking them for dead.
 * Critical sections are microseconds long; the default timeout is far beyond
 * any garbage-collection pause.
 *
 * An exclusive queue's lock (see Exclusive queues in layout.ts) is its one
 * instance's for good: taking it touches no word, and it is always held.
 */
/** Looks at a held lock before sleeping on it. */
const SPINS = 32;
/** Where the back-off loop writes, so the engine cannot remove it. */
let backoffSink = 0;

export class QueueLock {
  readonly #words: Int32Array;
  readonly #patience: Patience;
  readonly #tag: number;
  readonly #lock: number;
  readonly #waiters: number;
  readonly #attention: number | undefined;
  /** Whether the queue is exclusive (`exclusive`): then nobody else can want the lock. */
  readonly #access: Readonly<WordAccess>;
  #count = 0;
  #stamp = 0;

  constructor(words: Int32Array, patience: Patience, at: LockWords = QUEUE_LOCK, access: Readonly<WordAccess> = ATOMIC_ACCESS) {
    this.#words = words;
    this.#access = access;
    this.#patience = patience;
    this.#lock = at.lock;
    this.#waiters = at.waiters;
    this.#attention = at.attention;
    // 15 bits of thread identity and 16 bits of acquisition count: never 0, never negative.
    this.#tag = 1 + Math.floor(step.random() * 0x7ffe);
  }

  /**
   * Takes the lock. Returns true if the caller must rebuild the hints: the
   * lock was taken over from a presumed-dead holder, or a stalled holder
   * marked them stale (this caller clears the mark).
   */
  acquire(): boolean {
    if (this.#access.exclusive) return false;
    const stamp = (this.#stamp = this.#nextStamp());
    const words = this.#words;
    // The common case: free, one CAS.
    const tookOver = step.compareExchange(words, this.#lock, 0, stamp) === 0 ? false : this.#contended(stamp);
    const at = this.#attention;
    // A plain read first: the bit is almost never set, and a write would take the cache line from every reader.
    const stale = at !== undefined && (step.load(words, at) & HINTS_STALE) !== 0 && (step.and(words, at, ~HINTS_STALE) & HINTS_STALE) !== 0;
    return tookOver || stale;
  }

  /** Takes the lock if it is free; never waits. */
  tryAcquire(): boolean {
    if (this.#access.exclusive) return true;
    const stamp = this.#nextStamp();
    if (step.compareExchange(this.#words, this.#lock, 0, stamp) !== 0) return false;
    this.#stamp = stamp;
    return true;
  }

  /** True while any thread holds the lock (for a lock-free call that must not pass a holder mid-operation). */
  taken(): boolean {
    if (this.#access.exclusive) return false;
    // A read of the lock word: its line is written only as the lock changes hands.
    return step.load(this.#words, this.#lock) !== 0;
  }

  /** True while another thread holds the lock (a lock-free call must not stand by a job such a holder may be placing). */
  heldElsewhere(): boolean {
    if (this.#access.exclusive) return false;
    const word = step.load(this.#words, this.#lock);
    return word !== 0 && word !== this.#stamp;
  }

  /** True while this thread still holds the lock it acquired last (nobody took it over). */
  held(): boolean {
    if (this.#access.exclusive) return true;
    return step.load(this.#words, this.#lock) === this.#stamp;
  }

  /**
   * For a long critical section (a rebuild): swaps in a fresh stamp, so that
   * waiters see the holder alive. False if the lock is no longer ours.
   */
  touch(): boolean {
    if (this.#access.exclusive) return true;
    const stamp = this.#nextStamp();
    if (step.compareExchange(this.#words, this.#lock, this.#stamp, stamp) !== this.#stamp) return false;
    this.#stamp = stamp;
    return true;
  }

  release(): void {
    if (this.#access.exclusive) return;
    const words = this.#words;
    // A failed CAS means a waiter took the lock over while we stalled: it is theirs now, leave it,
    // but what we wrote since may have undone their repairs. And we were alive: the watchers misjudged.
    if (step.compareExchange(words, this.#lock, this.#stamp, 0) !== this.#stamp) {
      this.passOnRepair();
      this.#patience.misjudged();
    }
    if (step.load(words, this.#waiters) > 0) step.notify(words, this.#lock, 1);
  }

  /**
   * Leaves a rebuild to the next holder: a stalled holder's writes may have
   * undone a successor's repairs, or a holder that `acquire` asked to rebuild
   * could not (its call ended first).
   */
  passOnRepair(): void {
    // Both in one step (keeps I12): lock-free calls go to the lock from here on, and the next holder rebuilds, then opens the gate.
    if (this.#attention !== undefined) step.or(this.#words, this.#attention, GATE | HINTS_STALE);
  }

  #nextStamp(): number {
    this.#count = (this.#count + 1) & 0xffff;
    return (this.#tag << 16) | this.#count;
  }

  #contended(stamp: number): boolean {
    const words = this.#words;
    const lock = this.#lock;
    const napMillis = Math.max(1, Math.min(5, this.#patience.millis() / 10));
    const watch = new Watch(this.#patience, step.monotonicMillis());
    /** The stamp watched: a new one is a holder that moved on (stamps are never 0, so the first look starts the watch). */
    let watched = 0;
    for (let spins = 0; ; spins++) {
      const seen = step.load(words, lock);
      if (seen === 0) {
        if (step.compareExchange(words, lock, 0, stamp) === 0) return false;
        continue;
      }
      // Critical sections are short: a brief spin usually wins without a sleep. Between looks, back
      // off without touching shared memory, so the holder keeps the cache lines it is working on.
      if (spins < SPINS) {
        for (let i = 0, n = 32 << Math.min(spins, 6); i < n; i++) backoffSink = (backoffSink * 31 + i) | 0;
        continue;
      }
      step.add(words, this.#waiters, 1);
      step.wait(words, lock, seen, napMillis);
      step.sub(words, this.#waiters, 1);
      const silent = watch.look(step.monotonicMillis(), seen !== watched);
      watched = seen;
      // The holder has not moved for the whole patience: presume it dead, take over.
      if (silent && step.compareExchange(words, lock, seen, stamp) === seen) return true;
    }
  }
}
