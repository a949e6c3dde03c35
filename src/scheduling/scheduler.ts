/**
 * The deterministic scheduler: runs real threads (worker_threads running the
 * real core) so that only one of them runs between two steps of the core
 * (src/shm/memory/steps.ts), and picks which one by a seeded strategy
 * (strategies.ts). The same seed, threads and calls replay the same
 * interleaving, step for step, on any machine.
 *
 * It can also end a thread at a chosen step (as `worker.terminate()` ends it:
 * the thread is terminated while it waits for that step's turn, so the step
 * is never taken), and stall one there for a time of its virtual clock: the
 * time that patience (src/shm/protocol/patience.ts) is measured in, which moves only
 * when no thread can run, to the earliest deadline of a thread blocked in a
 * wait or stalled. So a stalled lock holder is presumed dead by its waiters
 * exactly when the plan says, and wakes later to find its lock taken over.
 *
 * `run` blocks the calling thread (Atomics.wait) until the history is over.
 */
import {
  AT_STEP, BATON, BLOCKED, DEADLINE, DONE, ENDED, GO, KIND, MAX_THREADS, NOTIFIED, START, THREAD_WORDS, TIMED_OUT, VIRTUAL_NOW, WAIT_RESULT, WOKEN,
  controlBuffer, f64Words, int32Words,
} from './control-words.js';
import type { Strategy } from './strategies.js';

/** A planned end of one thread: terminated while it waits at its `step`-th step of the history (1 is its first after the start). */
export interface PlannedKill {
  thread: number;
  step: number;
}

/** A planned stall: at its `step`-th step the thread is not run again until `millis` of virtual time have passed. */
export interface PlannedStall {
  thread: number;
  step: number;
  millis: number;
}

/**
 * A planned hold: at its `step`-th step the thread is not run again until
 * thread `until.thread` has taken `until.step` steps (or has ended, or no
 * other thread can run without time passing). Where a stall lets time pass with every other thread
 * waiting, a hold puts the held thread's next step in the middle of another
 * thread's call, at a point chosen from the step trace.
 */
export interface PlannedHold {
  thread: number;
  step: number;
  until: { thread: number; step: number };
}

export interface HistoryPlan {
  strategy: Strategy;
  kill?: PlannedKill;
  /** One stall, or several (of different threads, or of one thread at different steps). */
  stall?: PlannedStall | readonly PlannedStall[];
  hold?: PlannedHold;
  /** A history that takes more steps than this is reported as a livelock (default 200,000: a short history takes a few thousand). */
  maxSteps?: number;
}

export interface ScheduledRun {
  /** Steps taken, all threads together. */
  steps: number;
  /** Steps each thread took. */
  stepsOf: number[];
  /** The thread that took each step, in order: two runs of one seed give the same. */
  trace: Uint8Array;
  /** Threads ended by the plan. */
  killed: number[];
  /** The threads the plan stalled, once per stall that took effect, in the order they did. */
  stalled: number[];
  /** Virtual time at the end, in milliseconds. */
  virtualMillis: number;
}

/** The scheduler lost its threads: one ran this long (real time) without reaching a step, or never started. */
const HANDOVER_TIMEOUT_MILLIS = 120_000;

/** Something went wrong with the schedule itself, not with the queue: a thread that never reaches a step, a deadlock, a livelock. */
export class ScheduleError extends Error {
  override readonly name = 'ScheduleError';
}

export class Scheduler {
  /** The buffer every scheduled thread gets (ThreadControl's). */
  readonly buffer: SharedArrayBuffer = controlBuffer();
  readonly #words = int32Words(this.buffer);
  readonly #times = f64Words(this.buffer);

  /**
   * Runs one history of threads 0 … threads−1, which have been told to start
   * it (each calls ThreadControl#start, then makes its calls, then #done).
   * `terminate(thread)` ends a thread the plan kills.
   */
  run(threads: number, plan: HistoryPlan, terminate: (thread: number) => void): ScheduledRun {
    if (!(threads >= 1 && threads <= MAX_THREADS)) throw new RangeError(`Expected 1 to ${MAX_THREADS} threads, got ${threads}`);
    const words = this.#words;
    const times = this.#times;
    times[VIRTUAL_NOW] = 0;
    for (let t = 0; t < threads; t++) this.#awaitStart(t);
    const { strategy, kill, hold } = plan;
    const stalls = plan.stall === undefined ? [] : Array.isArray(plan.stall) ? (plan.stall as readonly PlannedStall[]) : [plan.stall as PlannedStall];
    const maxSteps = plan.maxSteps ?? 200_000;
    strategy.begin(threads);
    const stepsOf = new Array<number>(threads).fill(0);
    const woken = new Array<boolean>(threads).fill(false);
    const stalledUntil = new Array<number>(threads).fill(-Infinity);
    const stallsTaken = new Set<PlannedStall>();
    /** The thread the hold keeps waiting at its step, until its partner gets there: -1 if none (or no longer). */
    let held = -1;
    let holdTaken = false;
    const killed: number[] = [];
    const stalled: number[] = [];
    const trace: number[] = [];
    const enabled: number[] = [];
    for (;;) {
      const now = times[VIRTUAL_NOW]!;
      enabled.length = 0;
      let live = 0;
      let next = Infinity;
      if (held >= 0 && this.#holdIsOver(hold!, stepsOf, killed)) held = -1;
      for (let t = 0; t < threads; t++) {
        const baton = Atomics.load(words, t * THREAD_WORDS + BATON);
        if (baton === DONE || baton === ENDED || killed.includes(t)) continue;
        live++;
        if (stalledUntil[t]! > now) {
          next = Math.min(next, stalledUntil[t]!);
          continue;
        }
        if (t === held) continue;
        const deadline = times[DEADLINE + t]!;
        if (baton === AT_STEP || (baton === BLOCKED && (woken[t] || deadline <= now))) enabled.push(t);
        else if (baton === BLOCKED) next = Math.min(next, deadline);
      }
      if (live === 0) break;
      if (enabled.length === 0 && held >= 0) {
        // Its partner cannot get there now (it waits, for the held thread perhaps): the hold ends before any time
        // passes, so that a hold never makes its thread look dead (a stall does that).
        held = -1;
        continue;
      }
      if (enabled.length === 0) {
        // Nobody can run: time passes, to the first deadline or the end of a stall.
        if (next === Infinity) throw new ScheduleError(`Deadlock after ${trace.length} steps: every live thread waits with no deadline (${this.#describe(threads)})`);
        times[VIRTUAL_NOW] = next;
        continue;
      }
      if (trace.length >= maxSteps) throw new ScheduleError(`Livelock: ${maxSteps} steps and the history has not ended (${this.#describe(threads)})`);
      const thread = strategy.pick(enabled, trace.length);
      const at = thread * THREAD_WORDS;
      if (Atomics.load(words, at + BATON) === AT_STEP && words[at + KIND] !== START) {
        // A new step of the core (a BLOCKED thread resumes the step it blocked in; the start is no step).
        if (kill !== undefined && kill.thread === thread && kill.step === stepsOf[thread]! + 1) {
          killed.push(thread);
          terminate(thread);
          continue;
        }
        const stall = stalls.find((planned) => planned.thread === thread && planned.step === stepsOf[thread]! + 1 && !stallsTaken.has(planned));
        if (stall !== undefined) {
          stallsTaken.add(stall);
          stalled.push(thread);
          stalledUntil[thread] = now + stall.millis;
          continue;
        }
        if (hold !== undefined && hold.thread === thread && hold.step === stepsOf[thread]! + 1 && !holdTaken && !this.#holdIsOver(hold, stepsOf, killed)) {
          holdTaken = true;
          held = thread;
          continue;
        }
        stepsOf[thread]!++;
      } else if (Atomics.load(words, at + BATON) === BLOCKED) {
        words[at + WAIT_RESULT] = woken[thread] ? WOKEN : TIMED_OUT;
        woken[thread] = false;
      }
      trace.push(thread);
      this.#grant(thread);
      if (words[at + NOTIFIED] === 1) {
        words[at + NOTIFIED] = 0;
        for (let t = 0; t < threads; t++) if (t !== thread && Atomics.load(words, t * THREAD_WORDS + BATON) === BLOCKED) woken[t] = true;
      }
    }
    // The history is over: the threads that made all their calls may go on (pairs with ThreadControl#done).
    for (let t = 0; t < threads; t++) {
      if (Atomics.load(words, t * THREAD_WORDS + BATON) !== DONE || killed.includes(t)) continue;
      Atomics.store(words, t * THREAD_WORDS + BATON, ENDED);
      Atomics.notify(words, t * THREAD_WORDS + BATON);
    }
    return { steps: trace.length, stepsOf, trace: Uint8Array.from(trace), killed, stalled, virtualMillis: times[VIRTUAL_NOW]! };
  }

  /**
   * Clears the words of a thread the plan ended, once it has exited: a thread
   * killed while it waited at a step left its baton AT_STEP, the value the
   * next thread at that index stores as it starts, so #awaitStart could sleep
   * through that thread's start (its wait would see no change) and report a
   * thread that never started. Pairs with ThreadControl#start.
   */
  forget(thread: number): void {
    const words = this.#words;
    words[thread * THREAD_WORDS + KIND] = DONE;
    Atomics.store(words, thread * THREAD_WORDS + BATON, DONE);
  }

  /** Hands `thread` the baton (pairs with ThreadControl#handOver) and waits until it hands it back. */
  #grant(thread: number): void {
    const words = this.#words;
    const baton = thread * THREAD_WORDS + BATON;
    // The thread reads WAIT_RESULT (and the virtual time) after it sees GO.
    Atomics.store(words, baton, GO);
    Atomics.notify(words, baton);
    while (Atomics.load(words, baton) === GO) {
      if (Atomics.wait(words, baton, GO, HANDOVER_TIMEOUT_MILLIS) === 'timed-out') {
        throw new ScheduleError(`Thread ${thread} ran ${HANDOVER_TIMEOUT_MILLIS} ms without reaching a step of the core: a step outside the seam blocks it`);
      }
    }
  }

  /** Whether `hold`'s partner has taken its steps, or ended. */
  #holdIsOver(hold: PlannedHold, stepsOf: readonly number[], killed: readonly number[]): boolean {
    const { thread, step } = hold.until;
    const baton = Atomics.load(this.#words, thread * THREAD_WORDS + BATON);
    return stepsOf[thread]! >= step || baton === DONE || baton === ENDED || killed.includes(thread);
  }

  /** Waits until `thread` waits at its start step. */
  #awaitStart(thread: number): void {
    const words = this.#words;
    const at = thread * THREAD_WORDS;
    for (;;) {
      const baton = Atomics.load(words, at + BATON);
      if (baton === AT_STEP && words[at + KIND] === START) return;
      if (Atomics.wait(words, at + BATON, baton, HANDOVER_TIMEOUT_MILLIS) === 'timed-out') {
        throw new ScheduleError(`Thread ${thread} did not start its history within ${HANDOVER_TIMEOUT_MILLIS} ms`);
      }
    }
  }

  #describe(threads: number): string {
    const names = ['GO', 'AT_STEP', 'BLOCKED', 'DONE', 'ENDED'];
    return Array.from({ length: threads }, (_, t) => `thread ${t} ${names[this.#words[t * THREAD_WORDS + BATON]!]}`).join(', ');
  }
}
