/**
 * A scheduled thread's side of the handshake (control-words.ts): installed as
 * the StepControl of src/shm/memory/steps.ts, it hands the baton back to the
 * scheduler at every step of the core and sleeps until the scheduler hands it
 * over again. Pairs with Scheduler#grant in scheduler.ts.
 */
import { prng } from '../cli/random.js';
import { StepKind, controlSteps, type StepControl, type WaitResult } from '../shm/memory/steps.js';
import {
  AT_STEP, BATON, BLOCKED, DEADLINE, DONE, ENDED, GO, KIND, NOTIFIED, START, THREAD_WORDS, VIRTUAL_NOW, WAIT_RESULT, WOKEN, f64Words, int32Words,
} from './control-words.js';

/** LEASEHOLD_STEP_TRACE=n: a thread prints where it is every n steps (to find what a livelocked history loops on). */
const TRACE_EVERY = Number(process.env['LEASEHOLD_STEP_TRACE'] ?? 0);

export class ThreadControl implements StepControl {
  readonly #words: Int32Array;
  readonly #times: Float64Array;
  readonly #thread: number;
  readonly #at: number;
  #random: () => number = Math.random;
  /** Steps taken in this history: what a kill or a stall is planned by. */
  steps = 0;

  constructor(buffer: SharedArrayBuffer, thread: number) {
    this.#words = int32Words(buffer);
    this.#times = f64Words(buffer);
    this.#thread = thread;
    this.#at = thread * THREAD_WORDS;
  }

  /**
   * Begins a history: puts this thread's steps under the scheduler and waits
   * for its first grant, before the thread touches the queue. The seed makes
   * `random()` replayable.
   */
  start(seed: number): void {
    controlSteps(this);
    this.steps = 0;
    this.#random = prng((seed * 0x9e3779b1 + this.#thread) >>> 0);
    this.#handOver(AT_STEP, START);
  }

  /**
   * Ends this thread's part of a history: the baton goes back for good, and
   * its steps are its own again once the whole history is over (until then
   * it waits here, so that no timer of the core runs in it outside the
   * scheduler's order; pairs with the release at the end of Scheduler#run).
   */
  done(): void {
    controlSteps(undefined);
    const words = this.#words;
    const baton = this.#at + BATON;
    words[this.#at + KIND] = DONE;
    Atomics.store(words, baton, DONE);
    Atomics.notify(words, baton);
    while (Atomics.load(words, baton) !== ENDED) Atomics.wait(words, baton, DONE);
  }

  step(kind: StepKind): void {
    if (++this.steps % TRACE_EVERY === 0 && TRACE_EVERY > 0) console.error(`thread ${this.#thread} at step ${this.steps}:`, new Error().stack);
    this.#handOver(AT_STEP, kind);
  }

  wait(words: Int32Array, at: number, value: number, timeoutMillis: number): WaitResult {
    // Reading the word is the step; what it reads decides whether the thread blocks.
    this.step(StepKind.Wait);
    if (Atomics.load(words, at) !== value) return 'not-equal';
    if (!(timeoutMillis > 0)) return 'timed-out';
    this.#times[DEADLINE + this.#thread] = this.monotonicMillis() + timeoutMillis;
    this.#handOver(BLOCKED, StepKind.Wait);
    return this.#words[this.#at + WAIT_RESULT] === WOKEN ? 'ok' : 'timed-out';
  }

  notified(): void {
    // Read by the scheduler when the baton comes back at this thread's next step.
    this.#words[this.#at + NOTIFIED] = 1;
  }

  monotonicMillis(): number {
    return this.#times[VIRTUAL_NOW]!;
  }

  random(): number {
    return this.#random();
  }

  /** Gives the baton to the scheduler (pairs with Scheduler#grant) and sleeps until it comes back. */
  #handOver(state: number, kind: number): void {
    const words = this.#words;
    const baton = this.#at + BATON;
    words[this.#at + KIND] = kind;
    // Publishes KIND (and NOTIFIED, DEADLINE) with the baton: the scheduler reads them after it sees the store.
    Atomics.store(words, baton, state);
    Atomics.notify(words, baton);
    // The scheduler's grant is a store of GO and a notify on this word.
    while (Atomics.load(words, baton) !== GO) Atomics.wait(words, baton, state);
  }
}
