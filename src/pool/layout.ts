/**
 * The pool's control block, shared by the main thread and every pool thread.
 * Declared once here; nothing else computes an offset into it.
 *
 *   words     Int32   [ STOP EVENTS | thread 0: TICK REFUSED RECORDED RECYCLE RETIRE STARTED | thread 1: ... ]
 *   inflight  f64     [ thread 0: (JOB_NUM TOKEN ATTEMPT STARTED_AT DEADLINE TIMEOUT) × concurrency | thread 1: ... ]
 *   progress  Int32   [ thread 0: (REPORTS VALUE BASE LEASE) × concurrency | thread 1: ... ]
 *
 * STOP: 0 while the pool runs; 1 once `close()` began (threads poll no more
 *   and abort their handlers' signals). Written by the main thread only.
 * EVENTS: 1 while the main thread has event listeners or a logger, so threads
 *   record events; 0 otherwise. Written by the main thread only.
 * TICK: counted up by a pool thread's timer while its event loop turns; the
 *   main thread presumes a thread hung when its TICK stands still too long.
 * REFUSED: complete / fail calls of this thread refused because the lease was
 *   lost (zombie calls), counted for `stats()`.
 * RECORDED: the event records this thread has recorded (posted or still in
 *   its batch), counted up before the job that made them leaves the inflight
 *   block; `drain()` waits until the main thread has received as many.
 * RECYCLE: 0 while the thread works; 1 once it is recycling (it reached
 *   `maxJobsPerThread` or `maxHeapBytes`, has settled every job it held and
 *   posted its last events), written by the thread; 2 once the main thread has
 *   received those events (the end of its batches), written by the main thread,
 *   which the thread waits for before it exits. Back to 0 by the main thread as
 *   it launches the thread's successor.
 * RETIRE: 1 once the main thread retired this thread (idle past
 *   `idleTimeoutMillis`, above `minThreads`): it leases no more, lets its jobs
 *   settle and ends its loop. Written by the main thread; 0 at each launch.
 * STARTED: jobs this thread has started, counted up by the thread; the main
 *   thread reads it to tell an idle thread from a busy one between its looks.
 * JOB_NUM, TOKEN, ATTEMPT: the leases a thread holds now (JOB_NUM 0: none),
 *   so that the main thread can hand back the jobs of a thread it had to
 *   terminate, or of a pool it closes. STARTED_AT: when the attempt began
 *   (Date.now()). DEADLINE: when its timeout plus grace is over (0: no
 *   timeout), after which the main thread terminates a thread that did not
 *   end the attempt itself; TIMEOUT: that timeout, for the error text.
 *   Written by the owning thread; JOB_NUM is cleared by the main thread once
 *   it handed the job back.
 * REPORTS: the `ctx.progress()` calls made in this place, counted by the
 *   owning thread across the place's jobs (it never goes back). VALUE: the
 *   last value reported, as the bits of a float32. The thread stores VALUE,
 *   then REPORTS; the main thread loads REPORTS, then VALUE (Atomics on both
 *   ends, so each word is read whole), and extends the lease of the job the
 *   place holds only while it holds the same TOKEN as at the previous sample
 *   (see progress-watch.ts). BASE: REPORTS as the place's current job began;
 *   LEASE: that job's token modulo 2^31 (tokens never repeat, so the next job's
 *   differs). The thread stores BASE, then LEASE, before the job's inflight
 *   words; the main thread loads LEASE, then BASE: finding the token it read
 *   in LEASE, the BASE it loads is that job's (or a later job's, whose reports
 *   it then names an ended lease by, which the queue refuses), so the reports
 *   a job made before its first sample count as its own. Written by the
 *   owning thread only.
 */
export const STOP = 0;
export const EVENTS = 1;
export const THREADS_START = 2;
export const TICK = 0;
export const REFUSED = 1;
export const RECORDED = 2;
export const RECYCLE = 3;
export const RETIRE = 4;
export const STARTED = 5;
export const THREAD_WORDS = 6;
/** RECYCLE's values. */
export const WORKING = 0;
export const RECYCLING = 1;
export const RECYCLE_HEARD = 2;

export const INFLIGHT_JOB_NUM = 0;
export const INFLIGHT_TOKEN = 1;
export const INFLIGHT_ATTEMPT = 2;
export const INFLIGHT_STARTED_AT = 3;
export const INFLIGHT_DEADLINE = 4;
export const INFLIGHT_TIMEOUT = 5;
export const INFLIGHT_WAIT = 6; //   the lease's waitMillis, for the events of a job handed back for its thread
export const INFLIGHT_FIELDS = 7;

export const PROGRESS_REPORTS = 0;
export const PROGRESS_VALUE = 1;
export const PROGRESS_BASE = 2;
export const PROGRESS_LEASE = 3;
export const PROGRESS_FIELDS = 4;

/** A token as PROGRESS_LEASE holds it: modulo 2^31, an Int32 that never equals the place's previous job's. */
export function leaseWordOf(token: number): number {
  return token % 2 ** 31;
}

export interface PoolControlBuffers {
  words: SharedArrayBuffer;
  inflight: SharedArrayBuffer;
  progress: SharedArrayBuffer;
}

export function allocateControl(threads: number, concurrency: number): PoolControlBuffers {
  return {
    words: new SharedArrayBuffer((THREADS_START + threads * THREAD_WORDS) * Int32Array.BYTES_PER_ELEMENT),
    inflight: new SharedArrayBuffer(threads * concurrency * INFLIGHT_FIELDS * Float64Array.BYTES_PER_ELEMENT),
    progress: new SharedArrayBuffer(threads * concurrency * PROGRESS_FIELDS * Int32Array.BYTES_PER_ELEMENT),
  };
}

export function threadWord(thread: number, field: number): number {
  return THREADS_START + thread * THREAD_WORDS + field;
}

export function inflightAt(thread: number, concurrency: number, place: number): number {
  return (thread * concurrency + place) * INFLIGHT_FIELDS;
}

export function progressAt(thread: number, concurrency: number, place: number): number {
  return (thread * concurrency + place) * PROGRESS_FIELDS;
}
