/**
 * The seam: every step of the core that another thread can observe or race
 * goes through here — each Atomics call on the queue's shared words, each
 * plain read of a shared word that the protocol lets race (`racyRead`), each
 * wait and wake, and the two things a thread reads that are not shared memory
 * but decide what it does next: the monotonic time its patience runs on, and
 * the random tag of its lock stamps.
 *
 * With no control installed (always, outside the scheduler's tests) each
 * function is the Atomics call it names plus one test of a module variable;
 * the engine inlines both.
 *
 * A deterministic scheduler (src/scheduling/) installs a `StepControl` in
 * each thread it runs (`controlSteps`). It is called before every step and
 * returns only when the scheduler hands this thread the turn, so that only
 * one thread runs between two steps and the interleaving is the scheduler's
 * choice, replayable from its seed. The scheduler may also never hand the turn
 * back: the thread is ended there, as `worker.terminate()` ends it. Waits and
 * the monotonic time are the scheduler's too: a wait blocks until a `notify`
 * step or until the scheduler's virtual time passes its timeout, and the
 * scheduler moves that time only when no thread can run, so a thread it
 * stalls is presumed dead by the others' patience exactly when it chose.
 *
 * Plain accesses between two steps run as one block with the step before
 * them. The core's document says which plain accesses race and why those
 * left out of the seam cannot matter (docs/concurrency.md, "Testing the
 * protocol").
 */

/** What a step is, as the scheduler's trace shows it. */
export const enum StepKind {
  Load = 1,
  Store,
  Add,
  Sub,
  And,
  Or,
  Exchange,
  CompareExchange,
  Wait,
  Notify,
  RacyRead,
}

/** The results of a wait, as Atomics.wait gives them. */
export type WaitResult = 'ok' | 'not-equal' | 'timed-out';

/** A scheduler's hold on one thread's steps (see src/scheduling/thread-control.ts). */
export interface StepControl {
  /** Returns when this thread may take the step; never returns if the scheduler ends the thread here. */
  step(kind: StepKind): void;
  /** A wait of the core: blocks, in the scheduler's terms, until a notify step or until the timeout has passed in its virtual time. */
  wait(words: Int32Array, at: number, value: number, timeoutMillis: number): WaitResult;
  /** A notify step has been taken: the threads the scheduler holds in a wait may run again. */
  notified(): void;
  /** The scheduler's virtual time, in milliseconds. */
  monotonicMillis(): number;
  /** A seeded random number in [0, 1). */
  random(): number;
}

let control: StepControl | undefined;

/** Puts this thread's steps under `stepControl` (a scheduler's), or back on their own with `undefined`. */
export function controlSteps(stepControl: StepControl | undefined): void {
  control = stepControl;
}

export function load(words: Int32Array, at: number): number {
  if (control !== undefined) control.step(StepKind.Load);
  return Atomics.load(words, at);
}

export function store(words: Int32Array, at: number, value: number): number {
  if (control !== undefined) control.step(StepKind.Store);
  return Atomics.store(words, at, value);
}

export function add(words: Int32Array, at: number, delta: number): number {
  if (control !== undefined) control.step(StepKind.Add);
  return Atomics.add(words, at, delta);
}

export function sub(words: Int32Array, at: number, delta: number): number {
  if (control !== undefined) control.step(StepKind.Sub);
  return Atomics.sub(words, at, delta);
}

export function and(words: Int32Array, at: number, mask: number): number {
  if (control !== undefined) control.step(StepKind.And);
  return Atomics.and(words, at, mask);
}

export function or(words: Int32Array, at: number, mask: number): number {
  if (control !== undefined) control.step(StepKind.Or);
  return Atomics.or(words, at, mask);
}

export function exchange(words: Int32Array, at: number, value: number): number {
  if (control !== undefined) control.step(StepKind.Exchange);
  return Atomics.exchange(words, at, value);
}

export function compareExchange(words: Int32Array, at: number, expected: number, replacement: number): number {
  if (control !== undefined) control.step(StepKind.CompareExchange);
  return Atomics.compareExchange(words, at, expected, replacement);
}

/** The clock's word (ManualClock): a 64-bit one. */
export function load64(word: BigInt64Array, at: number): bigint {
  if (control !== undefined) control.step(StepKind.Load);
  return Atomics.load(word, at);
}

export function store64(word: BigInt64Array, at: number, value: bigint): bigint {
  if (control !== undefined) control.step(StepKind.Store);
  return Atomics.store(word, at, value);
}

export function compareExchange64(word: BigInt64Array, at: number, expected: bigint, replacement: bigint): bigint {
  if (control !== undefined) control.step(StepKind.CompareExchange);
  return Atomics.compareExchange(word, at, expected, replacement);
}

/** Atomics.wait, or under a scheduler its wait (see StepControl#wait). */
export function wait(words: Int32Array, at: number, value: number, timeoutMillis: number): WaitResult {
  if (control !== undefined) return control.wait(words, at, value, timeoutMillis);
  return Atomics.wait(words, at, value, timeoutMillis);
}

/** Sleeps `millis` without looking at anything: a wait on a word nobody changes or wakes. */
export function nap(millis: number): void {
  wait(NAP, 0, 0, millis);
}
const NAP = new Int32Array(new SharedArrayBuffer(4));

export function notify(words: Int32Array, at: number, count?: number): number {
  if (control === undefined) return Atomics.notify(words, at, count);
  control.step(StepKind.Notify);
  const woken = Atomics.notify(words, at, count);
  control.notified();
  return woken;
}

/**
 * Marks a plain read of a shared word that another thread may be writing at
 * that moment (a record read between two reads of its lease word, a hint the
 * lock holder publishes): a step of its own under a scheduler, nothing else.
 */
export function racyRead(): void {
  if (control !== undefined) control.step(StepKind.RacyRead);
}

/** performance.now(), or the scheduler's virtual time: what patience is measured in. */
export function monotonicMillis(): number {
  return control === undefined ? performance.now() : control.monotonicMillis();
}

/** Math.random(), or the scheduler's seeded draw. */
export function random(): number {
  return control === undefined ? Math.random() : control.random();
}
