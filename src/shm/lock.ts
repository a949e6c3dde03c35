import { HINTS_DIRTY, LOCK, LOCK_WAITERS } from './layout.js';

/**
 * The queue lock: one Int32 word, 0 when free, else the holder's stamp.
 *
 * A thread can be killed (`worker.terminate()`) while it holds the lock. Then
 * nobody would ever release it, so a waiter that sees the *same* stamp for
 * `timeoutMillis` of its own uninterrupted watching presumes the holder dead
 * and takes the lock over with a CAS from that stamp. The caller must then
 * repair what the dead holder may have left half-done (`acquire` returns
 * true). Stamps are unique per acquisition, so a lock that changes hands often
 * never looks stuck. A gap in the waiter's own watching (it was descheduled, or
 * the process was stopped) restarts the watch, so a waiter never blames a
 * holder for time in which it could not run either.
 *
 * A live holder taken for dead (stalled past the timeout) cannot commit a
 * slot move afterwards (commits check `held()`), and on `release` it finds the
 * lock gone and marks the hints dirty, so the next holder rebuilds them over
 * whatever the stalled thread wrote. Critical sections are microseconds long;
 * the default timeout is far beyond any garbage-collection pause.
 */
/** Looks at a held lock before sleeping on it. */
const SPINS = 32;
/** Where the back-off loop writes, so the engine cannot remove it. */
let backoffSink = 0;

export class QueueLock {
  readonly #words: Int32Array;
  readonly #timeoutMillis: number;
  readonly #tag: number;
  #count = 0;
  #stamp = 0;

  constructor(words: Int32Array, timeoutMillis: number) {
    this.#words = words;
    this.#timeoutMillis = timeoutMillis;
    // 15 bits of thread identity and 16 bits of acquisition count: never 0, never negative.
    this.#tag = 1 + Math.floor(Math.random() * 0x7ffe);
  }

  /**
   * Takes the lock. Returns true if the caller must rebuild the hints: the
   * lock was taken over from a presumed-dead holder, or a stalled holder
   * marked them dirty.
   */
  acquire(): boolean {
    const stamp = (this.#stamp = this.#nextStamp());
    const words = this.#words;
    // The common case: free, one CAS.
    const tookOver = Atomics.compareExchange(words, LOCK, 0, stamp) === 0 ? false : this.#contended(stamp);
    // A plain read first: the word is almost always 0, and an exchange would dirty the cache line.
    const dirty = Atomics.load(words, HINTS_DIRTY) !== 0 && Atomics.exchange(words, HINTS_DIRTY, 0) !== 0;
    return tookOver || dirty;
  }

  /** True while this thread still holds the lock it acquired last (nobody took it over). */
  held(): boolean {
    return Atomics.load(this.#words, LOCK) === this.#stamp;
  }

  /**
   * For a long critical section (a rebuild): swaps in a fresh stamp, so that
   * waiters see the holder alive. False if the lock is no longer ours.
   */
  touch(): boolean {
    const stamp = this.#nextStamp();
    if (Atomics.compareExchange(this.#words, LOCK, this.#stamp, stamp) !== this.#stamp) return false;
    this.#stamp = stamp;
    return true;
  }

  release(): void {
    const words = this.#words;
    // A failed CAS means a waiter took the lock over while we stalled: it is theirs now, leave it,
    // but what we wrote since may have undone their repairs.
    if (Atomics.compareExchange(words, LOCK, this.#stamp, 0) !== this.#stamp) Atomics.store(words, HINTS_DIRTY, 1);
    if (Atomics.load(words, LOCK_WAITERS) > 0) Atomics.notify(words, LOCK, 1);
  }

  #nextStamp(): number {
    this.#count = (this.#count + 1) & 0xffff;
    return (this.#tag << 16) | this.#count;
  }

  #contended(stamp: number): boolean {
    const words = this.#words;
    const timeout = this.#timeoutMillis;
    const napMillis = Math.max(1, Math.min(5, timeout / 10));
    // A longer gap between two looks means this waiter could not run either (descheduled, process stopped).
    const gapMillis = Math.max(timeout / 2, 50);
    let watched = 0;
    let watchStart = 0;
    let lastLook = 0;
    for (let spins = 0; ; spins++) {
      const seen = Atomics.load(words, LOCK);
      if (seen === 0) {
        if (Atomics.compareExchange(words, LOCK, 0, stamp) === 0) return false;
        continue;
      }
      // Critical sections are short: a brief spin usually wins without a sleep. Between looks, back
      // off without touching shared memory, so the holder keeps the cache lines it is working on.
      if (spins < SPINS) {
        for (let i = 0, n = 32 << Math.min(spins, 6); i < n; i++) backoffSink = (backoffSink * 31 + i) | 0;
        continue;
      }
      Atomics.add(words, LOCK_WAITERS, 1);
      Atomics.wait(words, LOCK, seen, napMillis);
      Atomics.sub(words, LOCK_WAITERS, 1);
      const now = performance.now();
      if (seen !== watched || now - lastLook > gapMillis) {
        watched = seen;
        watchStart = now;
      } else if (now - watchStart >= timeout) {
        // The holder has not moved for the whole timeout: presume it dead, take over.
        if (Atomics.compareExchange(words, LOCK, seen, stamp) === seen) return true;
      }
      lastLook = now;
    }
  }
}
