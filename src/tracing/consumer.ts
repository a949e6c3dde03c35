import type { Context, Span } from '@opentelemetry/api';
import { InvalidArgumentError, describe, thrownText } from '../errors.js';
import { otelApi } from '../optional.js';
import type { Lease } from '../types.js';
import { ATTR_ATTEMPT, ATTR_DEAD_LETTERED, ATTR_ERROR_TYPE, ATTR_MESSAGE_ID, ATTR_TOKEN, TRACER_NAME, errorType, messagingAttributes, spanName } from './conventions.js';

/**
 * One attempt's CONSUMER span, `process {queue}`: a child of the context its
 * job carries in its headers (the create span of a traced queue's submit),
 * else of the context active where it starts. Code run by `run` sees the span
 * as the active one, so spans a handler makes are its children (given a
 * context manager, as an SDK registers).
 */
export class ProcessSpan {
  readonly #span: Span;
  readonly #context: Context;
  #failed = false;

  /** Throws MissingDependencyError when @opentelemetry/api is not installed. */
  constructor(lease: Lease, destination: string) {
    const api = otelApi();
    const parent = api.propagation.extract(api.context.active(), lease.headers ?? {});
    this.#span = api.trace.getTracer(TRACER_NAME).startSpan(spanName('process', destination), {
      kind: api.SpanKind.CONSUMER,
      attributes: {
        ...messagingAttributes('process', destination),
        [ATTR_MESSAGE_ID]: lease.jobId,
        [ATTR_ATTEMPT]: lease.attempt,
        [ATTR_TOKEN]: lease.token,
      },
    }, parent);
    this.#context = api.trace.setSpan(parent, this.#span);
  }

  /** Runs `fn` with this span active. */
  run<T>(fn: () => T): T {
    return otelApi().context.with(this.#context, fn);
  }

  /** Marks the attempt failed: status ERROR, `error.type`, and whether the failure dead-lettered the job. */
  failed(type: string, message: string, deadLettered: boolean): void {
    this.#failed = true;
    this.#span.setAttributes({ [ATTR_ERROR_TYPE]: type, [ATTR_DEAD_LETTERED]: deadLettered });
    this.#span.setStatus({ code: otelApi().SpanStatusCode.ERROR, message });
  }

  end(): void {
    if (!this.#failed) this.#span.setAttribute(ATTR_DEAD_LETTERED, false);
    this.#span.end();
  }
}

/**
 * Runs `fn`, the work of one lease taken from the queue `queueName` in a
 * poll loop of your own, within the lease's process span (what a WorkerPool
 * does around each handler of a traced queue). A throw marks the span failed
 * (`leasehold.dead_lettered` when the lease was the job's last attempt, as a
 * fail of it would dead-letter it) and is thrown on; fail or complete the
 * lease yourself, as ever.
 */
export async function traceProcess<T>(lease: Lease, queueName: string, fn: () => T | Promise<T>): Promise<T> {
  if (lease === null || typeof lease !== 'object' || typeof lease.jobId !== 'string') {
    throw new InvalidArgumentError(`Expected \`lease\` to be a Lease from poll, got ${describe(lease)}`);
  }
  if (typeof queueName !== 'string' || queueName.trim() === '') {
    throw new InvalidArgumentError(`Expected \`queueName\` to be a non-blank string, got ${describe(queueName)}`);
  }
  if (typeof fn !== 'function') throw new InvalidArgumentError(`Expected \`fn\` to be a function, got ${describe(fn)}`);
  const span = new ProcessSpan(lease, queueName);
  try {
    return await span.run(fn);
  } catch (error) {
    span.failed(errorType(error), thrownText(error), lease.attempt >= lease.maxAttempts);
    throw error;
  } finally {
    span.end();
  }
}
