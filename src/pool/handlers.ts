import type { Payload } from '../types.js';
import { importHandlerModule } from './import-handlers.js';

/** What a pool thread hands a job handler besides the payload. */
export interface HandlerContext {
  readonly jobId: string;
  readonly type: string;
  readonly attempt: number;
  /** Aborted when the lease is lost (it expired, or a heartbeat was refused) or the pool closes. */
  readonly signal: AbortSignal;
  /** Extends the lease now; the pool also does this on its own while the thread is healthy. */
  heartbeat(): void;
  /**
   * Reports progress (a finite number; InvalidArgumentError otherwise): cheap enough for a tight loop, and
   * while reports keep coming the pool extends the lease, so a synchronous handler that reports is not hung.
   */
  progress(value: number): void;
  /**
   * Appends a line to the job's log (`queue.logs(jobId)`, the dashboard's Logs tab): a string
   * (InvalidArgumentError otherwise), cut to the queue's `maxLogLineBytes`, the oldest lines dropped
   * past its `maxLogLines`. Sent to the pool's main thread with the thread's events, once a tick,
   * which writes it through the pool's queue: a line logged just before the thread dies may be lost.
   */
  log(line: string): void;
  /**
   * A flow's parent (see JobQueue#submitFlow): the results of its children that SUCCEEDED and are still
   * in memory, by child id (`queue.childResults(jobId)`); {} for a job without children.
   */
  childResults(): Promise<Record<string, unknown>>;
}

/**
 * Runs one job: return → complete, with the returned value (or what a
 * returned Promise resolves to) as the job's result, none for undefined;
 * throw → fail; throw a PermanentError → dead-letter at once; return
 * `snooze(ms)` → back PENDING, ready in `ms`, the attempt not counted. A result the
 * queue refuses (not JSON-serializable, over `maxResultBytes`) fails the attempt.
 *
 * Its payload is a Uint8Array only for a job submitted with bytes. Declared as a method's type, whose
 * parameters TypeScript checks both ways, so that a handler written for text alone
 * (`(payload: string) => …`, as most are) is still a Handler.
 */
export type Handler = { run(payload: Payload, ctx: HandlerContext): unknown }['run'];

/**
 * Imports a handler module and maps job type → handler: its function-valued
 * named exports, and the function-valued properties of its default export
 * when that is an object.
 */
export async function loadHandlers(moduleUrl: string): Promise<Map<string, Handler>> {
  const module = await importHandlerModule(moduleUrl);
  const handlers = new Map<string, Handler>();
  const defaults = module.default;
  if (defaults !== null && typeof defaults === 'object') {
    for (const [type, value] of Object.entries(defaults)) if (typeof value === 'function') handlers.set(type, value as Handler);
  }
  for (const [type, value] of Object.entries(module)) {
    if (type !== 'default' && typeof value === 'function') handlers.set(type, value as Handler);
  }
  return handlers;
}
