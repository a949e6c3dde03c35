/**
 * The heartbeats of one pool thread's running jobs, on one timer. Each job
 * beats every `period` ms while it runs. A timer of its own per job
 * (setInterval, then clearInterval) cost about 0.3 µs of every job, and most
 * jobs end long before their first beat. Here one timer is armed for the
 * earliest beat due, and moved only when a new job's first beat is earlier:
 * back-to-back jobs of one lease length leave it alone, and it fires about
 * once a period, to beat what is due and arm itself for the next.
 *
 * A beat fires on time as long as the thread's event loop turns, as a job's
 * own interval did; a handler that blocks the loop stops every beat, which is
 * what lets its lease run out. The timer is unref'd: it never keeps the
 * thread alive (the thread's loop keeps a ticker of its own while it runs).
 */
export interface Beat {
  readonly period: number;
  readonly beat: () => void;
  dueAt: number;
}

export class Heartbeats {
  readonly #beats = new Set<Beat>();
  #timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now() time); Infinity when it is not armed. */
  #armedFor = Infinity;

  /** Calls `beat` every `period` ms from now until `stop` (`period`: at most MAX_TIMER_MILLIS). */
  start(period: number, beat: () => void): Beat {
    const entry: Beat = { period, beat, dueAt: performance.now() + period };
    this.#beats.add(entry);
    if (entry.dueAt < this.#armedFor) this.#arm(entry.dueAt);
    return entry;
  }

  /** No more beats of `entry` (the timer stays: it fires once more at most, and finds nothing of it). */
  stop(entry: Beat): void {
    this.#beats.delete(entry);
  }

  #arm(at: number): void {
    clearTimeout(this.#timer);
    this.#armedFor = at;
    this.#timer = setTimeout(this.#fire, Math.max(0, at - performance.now()));
    this.#timer.unref();
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#armedFor = Infinity;
    const now = performance.now();
    for (const entry of this.#beats) {
      if (entry.dueAt > now) continue;
      // The next beat a period after this one, not after when it was due: a loop that was busy does not make beats bunch up.
      entry.dueAt = now + entry.period;
      entry.beat();
    }
    // A beat may have stopped its own entry, or others: look at what is left.
    let next = Infinity;
    for (const entry of this.#beats) next = Math.min(next, entry.dueAt);
    if (next < this.#armedFor) this.#arm(next);
  };
}
