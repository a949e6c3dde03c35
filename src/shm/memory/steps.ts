/**
 * The seam: every step of the core that another thread can observe or race
 * goes through here — each Atomics call on the queue's shared words, each
 * plain read of a shared word that the protocol lets race (`racyRead`), each
 * wait and wake, and the two things a thread reads that are not shared memory
 * but decide what it does next: the monotonic time its patience runs on, and
 * the random tag of its lock stamps.
 *
 * Outside the scheduler's tests each function is the Atomics function it
 * names (see SCHEDULED below).
 *
 * A deterministic scheduler (src/scheduling/) installs a `StepControl` in
 * each thread it runs (`controlSteps`), started with LEASEHOLD_SCHEDULED=1. It is called before every step and
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
 * left out of the seam cannot matter (src/shm/README.md, "The memory
 * model").
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
  Grow,
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

/**
 * Whether this thread's steps can be put under a scheduler: fixed when the
 * module loads, from the thread's environment (a scheduled test starts its
 * threads with LEASEHOLD_SCHEDULED=1). Otherwise each function below is
 * Atomics' own, so the engine compiles a step exactly as the Atomics call:
 * a wrapper with a test would take from the inlining budget of the core's
 * hot functions (measured: 1-thread drains ~15% slower).
 */
const SCHEDULED = process.env['LEASEHOLD_SCHEDULED'] === '1';

let control: StepControl | undefined;

/** Puts this thread's steps under `stepControl` (a scheduler's), or back on their own with `undefined`. Only in a thread started with LEASEHOLD_SCHEDULED=1. */
export function controlSteps(stepControl: StepControl | undefined): void {
  if (!SCHEDULED) throw new Error('Steps can be controlled only in a thread started with LEASEHOLD_SCHEDULED=1 in its environment');
  control = stepControl;
}

/** A step of kind `kind`, then `atomic` itself. */
function scheduled<A extends unknown[], R>(kind: StepKind, atomic: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    if (control !== undefined) control.step(kind);
    return atomic(...args);
  };
}

/** `atomic` as the core calls it: itself, or in a thread started with LEASEHOLD_SCHEDULED=1, a step first. */
function seam<A extends unknown[], R>(kind: StepKind, atomic: (...args: A) => R): (...args: A) => R {
  return SCHEDULED ? scheduled(kind, atomic) : atomic;
}

// Atomics' functions use no `this`: each is used unbound.
type Load = (words: Int32Array, at: number) => number;
export const load: Load = seam(StepKind.Load, Atomics.load as Load);
type Store = (words: Int32Array, at: number, value: number) => number;
export const store: Store = seam(StepKind.Store, Atomics.store as Store);
type Add = (words: Int32Array, at: number, delta: number) => number;
export const add: Add = seam(StepKind.Add, Atomics.add as Add);
type Sub = (words: Int32Array, at: number, delta: number) => number;
export const sub: Sub = seam(StepKind.Sub, Atomics.sub as Sub);
type And = (words: Int32Array, at: number, mask: number) => number;
export const and: And = seam(StepKind.And, Atomics.and as And);
type Or = (words: Int32Array, at: number, mask: number) => number;
export const or: Or = seam(StepKind.Or, Atomics.or as Or);
type Exchange = (words: Int32Array, at: number, value: number) => number;
export const exchange: Exchange = seam(StepKind.Exchange, Atomics.exchange as Exchange);
type CompareExchange = (words: Int32Array, at: number, expected: number, replacement: number) => number;
export const compareExchange: CompareExchange = seam(StepKind.CompareExchange, Atomics.compareExchange as CompareExchange);

/** The clock's word (ManualClock): a 64-bit one. */
type Load64 = (word: BigInt64Array, at: number) => bigint;
export const load64: Load64 = seam(StepKind.Load, Atomics.load as Load64);
type Store64 = (word: BigInt64Array, at: number, value: bigint) => bigint;
export const store64: Store64 = seam(StepKind.Store, Atomics.store as Store64);
type CompareExchange64 = (word: BigInt64Array, at: number, expected: bigint, replacement: bigint) => bigint;
export const compareExchange64: CompareExchange64 = seam(StepKind.CompareExchange, Atomics.compareExchange as CompareExchange64);

/** Atomics.wait, or under a scheduler its wait (see StepControl#wait). */
export const wait: (words: Int32Array, at: number, value: number, timeoutMillis: number) => WaitResult = SCHEDULED
  ? (words, at, value, timeoutMillis) => (control !== undefined ? control.wait(words, at, value, timeoutMillis) : Atomics.wait(words, at, value, timeoutMillis))
  : (Atomics.wait as (words: Int32Array, at: number, value: number, timeoutMillis: number) => WaitResult);

export const notify: (words: Int32Array, at: number, count?: number) => number = SCHEDULED
  ? (words, at, count) => {
      if (control === undefined) return Atomics.notify(words, at, count);
      control.step(StepKind.Notify);
      const woken = Atomics.notify(words, at, count);
      control.notified();
      return woken;
    }
  : (Atomics.notify as (words: Int32Array, at: number, count?: number) => number);

const NAP = new Int32Array(new SharedArrayBuffer(4));

/** Sleeps `millis` without looking at anything: a wait on a word nobody changes or wakes. */
export function nap(millis: number): void {
  wait(NAP, 0, 0, millis);
}

/**
 * Marks a plain read of a shared word that another thread may be writing at
 * that moment (a record read between two reads of its lease word, a hint the
 * lock holder publishes): a step of its own under a scheduler, nothing else.
 */
export const racyRead: () => void = SCHEDULED
  ? () => {
      if (control !== undefined) control.step(StepKind.RacyRead);
    }
  : () => {};

/**
 * Grows a growable buffer to `bytes` (see growth.ts): a step, since every
 * thread that holds the buffer sees the new length at once.
 */
export const grow: (buffer: SharedArrayBuffer, bytes: number) => void = SCHEDULED
  ? (buffer, bytes) => {
      if (control !== undefined) control.step(StepKind.Grow);
      buffer.grow(bytes);
    }
  : (buffer, bytes) => buffer.grow(bytes);

/** A buffer's byteLength, which another thread's `grow` may be raising: a racing read, a step under a scheduler. */
export const byteLength: (buffer: SharedArrayBuffer) => number = SCHEDULED
  ? (buffer) => {
      if (control !== undefined) control.step(StepKind.RacyRead);
      return buffer.byteLength;
    }
  : (buffer) => buffer.byteLength;

/** performance.now(), or the scheduler's virtual time: what patience is measured in. */
export function monotonicMillis(): number {
  return control === undefined ? performance.now() : control.monotonicMillis();
}

/** Math.random(), or the scheduler's seeded draw. */
export function random(): number {
  return control === undefined ? Math.random() : control.random();
}
