import type { Span, Tracer } from '@opentelemetry/api';
import { thrownText } from '../errors.js';
import { otelApi } from '../optional.js';
import { setHeaders, type CheckedJob } from '../validate/job-input.js';
import { ATTR_ERROR_TYPE, ATTR_MESSAGE_ID, TRACER_NAME, errorType, messagingAttributes, spanName } from './conventions.js';

type OtelApi = ReturnType<typeof otelApi>;

/**
 * The submits of a traced queue: a PRODUCER span `create {queue}` per job,
 * whose context (W3C `traceparent`, by the global propagator) is injected
 * into the job's headers before it is stored, so that every attempt's
 * process span, in whatever thread or process, is its child. The spans come
 * from the global tracer provider, as a library's should.
 */
export class ProducerTracing {
  readonly #api: OtelApi;
  readonly #tracer: Tracer;
  readonly #destination: string;

  /** Throws MissingDependencyError when @opentelemetry/api is not installed. */
  constructor(destination: string) {
    this.#api = otelApi();
    this.#tracer = this.#api.trace.getTracer(TRACER_NAME);
    this.#destination = destination;
  }

  /**
   * Runs `submit` (a synchronous submit or one that returns a Promise) for
   * `jobs` within their create spans: each span is started and injected into
   * its job first, then ended with the job's id, or with status ERROR and
   * `error.type` if the submit refused them.
   */
  traced<R extends string[] | Promise<string[]>>(jobs: readonly CheckedJob[], submit: () => R): R {
    const spans: Span[] = [];
    let ids: R;
    try {
      for (const job of jobs) spans.push(this.#start(job));
      ids = submit();
    } catch (error) {
      this.#refused(spans, error);
      throw error;
    }
    if (!(ids instanceof Promise)) {
      this.#stored(spans, ids as string[]);
      return ids;
    }
    return ids.then(
      (stored) => {
        this.#stored(spans, stored);
        return stored;
      },
      (error: unknown) => {
        this.#refused(spans, error);
        throw error;
      },
    ) as R;
  }

  /** A job's create span, its context injected into the job's headers (over any of the same name the user gave). */
  #start(job: CheckedJob): Span {
    const api = this.#api;
    const span = this.#tracer.startSpan(spanName('create', this.#destination), {
      kind: api.SpanKind.PRODUCER,
      attributes: messagingAttributes('create', this.#destination),
    });
    const headers: Record<string, string> = { ...job.headers };
    api.propagation.inject(api.trace.setSpan(api.context.active(), span), headers);
    try {
      setHeaders(job, headers);
    } catch (error) {
      span.end();
      throw error;
    }
    return span;
  }

  #stored(spans: readonly Span[], ids: readonly string[]): void {
    spans.forEach((span, i) => span.setAttribute(ATTR_MESSAGE_ID, ids[i]!).end());
  }

  #refused(spans: readonly Span[], error: unknown): void {
    const { SpanStatusCode } = this.#api;
    for (const span of spans) {
      span.setAttribute(ATTR_ERROR_TYPE, errorType(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: thrownText(error) });
      span.end();
    }
  }
}
