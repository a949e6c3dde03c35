/**
 * How one instance reads and writes the queue's shared words: with Atomics,
 * or, while the queue is exclusive (see Exclusive queues in layout.ts), with
 * plain typed-array accesses. No other thread can see an exclusive queue's
 * memory, so there is nothing to order; and on Node 20 an Atomics call costs
 * about ten nanoseconds more than a plain access, some forty times per job.
 *
 * One WordAccess per QueueMemory: `share()` turns it to atomic, between two
 * calls, for good. Code that must stay atomic whatever the mode (a wait or a
 * notify, the lease words' CASes of the shared protocol) calls Atomics itself.
 */
import * as step from './steps.js';

export class WordAccess {
  /** True while the queue is exclusive: every access below is a plain one. */
  exclusive = false;

  load(words: Int32Array, at: number): number {
    return this.exclusive ? words[at]! : step.load(words, at);
  }

  store(words: Int32Array, at: number, value: number): void {
    if (this.exclusive) words[at] = value;
    else step.store(words, at, value);
  }

  /** Adds `delta`; returns the old value, as Atomics.add does. */
  add(words: Int32Array, at: number, delta: number): number {
    if (!this.exclusive) return step.add(words, at, delta);
    const old = words[at]!;
    words[at] = old + delta;
    return old;
  }

  /** Stores `replacement` if the word holds `expected`; returns the old value, as Atomics.compareExchange does. */
  compareExchange(words: Int32Array, at: number, expected: number, replacement: number): number {
    if (!this.exclusive) return step.compareExchange(words, at, expected, replacement);
    const old = words[at]!;
    if (old === expected) words[at] = replacement;
    return old;
  }
}

/** For the words that are never an exclusive queue's (the journal's commit leader): always atomic. */
export const ATOMIC_ACCESS: Readonly<WordAccess> = Object.freeze(new WordAccess());
