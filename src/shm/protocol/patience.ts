import * as step from '../memory/steps.js';
import { PATIENCE } from '../memory/layout.js';

/** At most 2^6 = 64 × lockTimeoutMillis... */
const MAX_DOUBLINGS = 6;
/** ...and at most 4 s (unless lockTimeoutMillis itself is longer): far beyond a wait for a core, and a thread killed later is still found within it. */
const CEILING_MILLIS = 4_000;

/**
 * How long a watcher waits for a thread that shows no progress (a lock
 * holder, a row inside a lock-free call) before it presumes the thread dead:
 * `lockTimeoutMillis`, doubled each time a thread so presumed turned out to be
 * alive, for every thread of the queue and for the rest of its life.
 *
 * A timeout cannot tell a killed thread from one the scheduler has not run:
 * on a machine with many more busy threads than cores, a holder can wait tens
 * of milliseconds for a core in the middle of a short critical section. Taking
 * it for dead is safe but costs a rebuild (O(capacity)), itself a critical
 * section long enough to be taken over the same way, and the takeovers feed
 * each other until hardly a job moves. The thread that was misjudged is the
 * one that learns of it (its lock was gone at `release`, its row was revoked),
 * so it raises the patience, and after a few raises the watchers stop
 * misjudging: the failure detector that is eventually right by growing its
 * timeout on every false suspicion (Chandra and Toueg, "Unreliable failure
 * detectors for reliable distributed systems", JACM 1996). The price is that a
 * thread really killed afterwards is found later: after at most 64 × the
 * option or 4 s, whichever is less.
 */
export class Patience {
  readonly #words: Int32Array;
  readonly #baseMillis: number;
  readonly #ceilingMillis: number;

  constructor(lockWords: Int32Array, baseMillis: number) {
    this.#words = lockWords;
    this.#baseMillis = baseMillis;
    this.#ceilingMillis = Math.max(baseMillis, CEILING_MILLIS);
  }

  /** The wait, in milliseconds, before a thread that shows no progress is presumed dead. */
  millis(): number {
    // Read each time: another thread may have raised it while this one watched.
    return Math.min(this.#baseMillis * 2 ** step.load(this.#words, PATIENCE), this.#ceilingMillis);
  }

  /** A thread presumed dead was alive after all: every watcher waits twice as long from now on. */
  misjudged(): void {
    const doublings = step.load(this.#words, PATIENCE);
    // From the value read: two threads that learn of one burst of takeovers at once double it once.
    if (doublings < MAX_DOUBLINGS) step.compareExchange(this.#words, PATIENCE, doublings, doublings + 1);
  }
}

/**
 * One watcher's watch of threads that show no progress: they are presumed
 * dead once silent for the whole patience, by the watcher's own looking. A
 * sign of progress restarts the watch, and so does a gap between two looks
 * longer than half the patience (50 ms at least): then the watcher could not
 * run either (descheduled, its process stopped), and blames nobody for it.
 */
export class Watch {
  readonly #patience: Patience;
  readonly #gapMillis: number;
  #start: number;
  #lastLook: number;

  /** A watch that starts at `now` (steps.monotonicMillis()). */
  constructor(patience: Patience, now: number) {
    this.#patience = patience;
    this.#gapMillis = Math.max(patience.millis() / 2, 50);
    this.#start = now;
    this.#lastLook = now;
  }

  /** Looks again at `now`: true once the watched threads have been silent for the whole patience (`progressed`: they were not). */
  look(now: number, progressed: boolean): boolean {
    if (progressed || now - this.#lastLook > this.#gapMillis) this.#start = now;
    this.#lastLook = now;
    return now - this.#start >= this.#patience.millis();
  }
}
