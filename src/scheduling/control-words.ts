/**
 * The shared words between the scheduler and the threads it runs, declared
 * once. One block of words per thread; the scheduler's virtual time after them.
 *
 *   int32 [ thread 0: BATON KIND WAIT_RESULT NOTIFIED | thread 1 ... ]
 *   f64   [ thread 0: DEADLINE | thread 1 ... | VIRTUAL_NOW ]
 *
 * The BATON word is the handshake: a thread sets it to AT_STEP, BLOCKED or
 * DONE and sleeps on it; the scheduler sets it to GO and wakes the thread.
 * Only one of the two writes it at a time, so every other word is written by
 * whoever is about to hand the baton over, and read by the one receiving it.
 *
 *   GO ─thread reaches a step─▶ AT_STEP ─scheduler grants─▶ GO
 *   GO ─thread waits (StepControl#wait)─▶ BLOCKED ─notify step or deadline─▶ GO
 *   GO ─thread ends its calls─▶ DONE ─history over─▶ ENDED ─next history─▶ AT_STEP (its start)
 *
 * A thread DONE waits for ENDED before it returns to its event loop: a timer
 * of the core (the journal's commit-soon) must not fire in it while the
 * other threads are still scheduled, outside the scheduler's order.
 */

/** The most threads one scheduler runs. */
export const MAX_THREADS = 16;

// ── int32 words of thread t, at t * THREAD_WORDS ──
/** The handshake word (values below). */
export const BATON = 0;
/** The StepKind of the step the thread waits at (src/shm/memory/steps.ts), or a thread event below. */
export const KIND = 1;
/** What the wait the thread was BLOCKED in returns: WOKEN or TIMED_OUT. */
export const WAIT_RESULT = 2;
/** Set by the thread when it took a notify step; the scheduler reads and clears it when the baton comes back. */
export const NOTIFIED = 3;
export const THREAD_WORDS = 4;

// ── values of BATON ──
/** The thread runs (granted its step). */
export const GO = 0;
/** The thread waits at a step for the turn. */
export const AT_STEP = 1;
/** The thread waits in a wait of the core: until a notify step or its deadline. */
export const BLOCKED = 2;
/** The thread has made all its calls of this history. */
export const DONE = 3;
/** The history is over: a thread DONE may go on. */
export const ENDED = 4;

// ── values of KIND besides the StepKinds ──
/** The thread's first step of a history, before its first call. */
export const START = 100;

// ── values of WAIT_RESULT ──
export const WOKEN = 0;
export const TIMED_OUT = 1;

// ── f64 words ──
/** Thread t's deadline in virtual time while BLOCKED, at t. */
export const DEADLINE = 0;
/** The scheduler's virtual time, in milliseconds: moved only while no thread can run. */
export const VIRTUAL_NOW = MAX_THREADS;
const F64_WORDS = MAX_THREADS + 1;

/** A new control buffer: all threads DONE, virtual time 0. */
export function controlBuffer(): SharedArrayBuffer {
  const buffer = new SharedArrayBuffer(MAX_THREADS * THREAD_WORDS * 4 + F64_WORDS * 8);
  const words = int32Words(buffer);
  for (let t = 0; t < MAX_THREADS; t++) words[t * THREAD_WORDS + BATON] = DONE;
  return buffer;
}

export function int32Words(buffer: SharedArrayBuffer): Int32Array {
  return new Int32Array(buffer, 0, MAX_THREADS * THREAD_WORDS);
}

export function f64Words(buffer: SharedArrayBuffer): Float64Array {
  return new Float64Array(buffer, MAX_THREADS * THREAD_WORDS * 4, F64_WORDS);
}
