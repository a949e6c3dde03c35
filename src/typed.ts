/**
 * Typed jobs: payloads as JSON values whose type the handler module declares.
 * The handler module's default export, made by `jsonHandlers`, maps each job
 * type to a handler taking its decoded payload; a `JsonJobs` over a queue,
 * parameterized by that export's type, only accepts a payload of the type its
 * handler takes — `submit('email', { to: 1 })` against `(payload: { to: string })`
 * does not compile.
 *
 * ```ts
 * // handlers.ts
 * export default jsonHandlers({ email: async (payload: { to: string }, ctx) => { ... } });
 * // app.ts
 * import type handlers from './handlers.js';
 * const jobs = new JsonJobs<typeof handlers>(queue);
 * jobs.submit('email', { to: 'ada@example.com' });
 * ```
 */
import { InvalidArgumentError, PermanentError, describe } from './errors.js';
import { readCallers } from './options.js';
import type { Handler, HandlerContext } from './pool/handlers.js';
import type { JobQueue } from './queue.js';
import type { RedisJobQueue } from './redis/queue.js';
import type { Payload } from './types.js';
import type { NewJob, SubmitOptions } from './validate/job-input.js';

/** A handler of decoded payloads (`never` here admits a handler of any payload type). */
type DecodedHandler = (payload: never, ctx: HandlerContext) => unknown;

declare const payloadTypes: unique symbol;

/**
 * A handler module's default export: job type → handler of the raw (JSON)
 * payload, as the pool calls it. It carries, for the compiler only, each
 * type's payload type.
 */
export type JsonHandlers<Payloads> = { readonly [Type in keyof Payloads]: Handler } & {
  readonly [payloadTypes]?: Payloads;
};

/** Job type → payload type, of a `jsonHandlers` export. */
export type PayloadsOf<Module> = Module extends JsonHandlers<infer Payloads> ? Payloads : never;

/**
 * Wraps handlers of decoded payloads into a handler module's default export:
 * each gets `JSON.parse(payload)`. A payload that is not JSON is a poison job
 * (no retry will parse it): it is dead-lettered at once.
 */
export function jsonHandlers<Handlers extends { [Type in keyof Handlers]: DecodedHandler }>(
  handlers: Handlers,
): JsonHandlers<{ [Type in keyof Handlers]: Parameters<Handlers[Type]>[0] }> {
  if (handlers === null || typeof handlers !== 'object') {
    throw new InvalidArgumentError(`Expected \`handlers\` to be an object of handler functions by job type, got ${describe(handlers)}`);
  }
  const wrapped: Record<string, Handler> = {};
  for (const [type, handler] of readCallers('handlers', () => Object.entries(handlers)) as [string, unknown][]) {
    if (typeof handler !== 'function') throw new InvalidArgumentError(`Expected \`handlers.${type}\` to be a function, got ${describe(handler)}`);
    const decoded = handler as (payload: unknown, ctx: HandlerContext) => unknown;
    wrapped[type] = (payload, ctx) => decoded(decode(payload, ctx), ctx);
  }
  return wrapped as JsonHandlers<{ [Type in keyof Handlers]: Parameters<Handlers[Type]>[0] }>;
}

function decode(payload: Payload, ctx: HandlerContext): unknown {
  if (typeof payload !== 'string') throw new PermanentError(`Job ${ctx.jobId} (${ctx.type}): its payload is binary, not JSON text`);
  try {
    return JSON.parse(payload);
  } catch (error) {
    throw new PermanentError(`Job ${ctx.jobId} (${ctx.type}): its payload is not JSON (${(error as Error).message})`);
  }
}

/** A queue `JsonJobs` submits to: results plain (JobQueue) or Promises (RedisJobQueue). */
type SubmitQueue = Pick<JobQueue, 'submit' | 'submitMany'> | Pick<RedisJobQueue, 'submit' | 'submitMany'>;
type Submitted<Queue, Result> = Queue extends Pick<JobQueue, 'submit'> ? Result : Promise<Result>;

/** One job of `submitMany`, typed by its job type, with `submit`'s options (as `NewJob` has them). */
export type JsonJob<Payloads> = {
  [Type in keyof Payloads & string]: Omit<NewJob, 'type' | 'payload'> & { type: Type; payload: Payloads[Type] };
}[keyof Payloads & string];

/**
 * Submits jobs whose payloads are JSON-encoded values of the types the
 * handler module `Module` (a `jsonHandlers` export) declares.
 */
export class JsonJobs<Module extends JsonHandlers<unknown>, Queue extends SubmitQueue = JobQueue> {
  readonly #queue: Queue;

  constructor(queue: Queue) {
    this.#queue = queue;
  }

  /**
   * `queue.submit(type, JSON.stringify(payload), options)` with submit's
   * options (`{ priority, delayMillis, maxAttempts, key, ... }`), or the
   * positional form's `priority, runAtMillis`. One signature rather than two
   * overloads, so that a payload of the wrong type is reported as such; the
   * queue refuses a mix of both forms (options and a runAtMillis).
   */
  submit<Type extends keyof PayloadsOf<Module> & string>(
    type: Type, payload: PayloadsOf<Module>[Type], priorityOrOptions?: number | SubmitOptions, runAtMillis?: number,
  ): Submitted<Queue, string> {
    const submit = this.#queue.submit as (type: string, payload: string, priorityOrOptions?: number | SubmitOptions, runAtMillis?: number) => unknown;
    return submit.call(this.#queue, type, JSON.stringify(payload), priorityOrOptions, runAtMillis) as Submitted<Queue, string>;
  }

  /** `queue.submitMany` with each payload JSON-encoded: all are checked first; all or none. */
  submitMany(jobs: readonly JsonJob<PayloadsOf<Module>>[]): Submitted<Queue, string[]> {
    const encoded = jobs.map((job) => ({ ...job, payload: JSON.stringify(job.payload) }));
    return this.#queue.submitMany(encoded) as Submitted<Queue, string[]>;
  }
}
