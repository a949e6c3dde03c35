import type { HandlerContext } from './handlers.js';

/**
 * A job's abort signal, made only when its handler reads it: Node 20 makes an
 * AbortController in about 2 µs here, as long as the rest of a no-op job's
 * run through a pool thread, and most handlers never read their signal. An
 * abort before the first read is kept and applied as the signal is made, so
 * a handler that reads it late finds it aborted, with the same reason.
 */
export class LazyAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts with `reason` (given: the pool always says why); the first abort's reason stands, as with AbortController. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  /** Why it was aborted; undefined while it is not. */
  get reason(): unknown {
    return this.#reason;
  }
}

/**
 * What a handler gets besides its payload. A class, not an object literal: a
 * literal with a getter is made on V8's slow path (about 350 ns here, per job).
 * `signal` is a getter of the prototype, so a spread copy of the context
 * (`{ ...ctx }`) has no signal: pass `ctx` itself, or `ctx.signal`.
 */
export class JobContext implements HandlerContext {
  readonly jobId: string;
  readonly type: string;
  readonly attempt: number;
  readonly heartbeat: () => void;
  readonly #aborter: LazyAbort;

  constructor(jobId: string, type: string, attempt: number, heartbeat: () => void, aborter: LazyAbort) {
    this.jobId = jobId;
    this.type = type;
    this.attempt = attempt;
    this.heartbeat = heartbeat;
    this.#aborter = aborter;
  }

  get signal(): AbortSignal {
    return this.#aborter.signal;
  }
}
