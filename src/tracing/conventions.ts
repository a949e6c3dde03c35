/**
 * The names our spans and their attributes take, after OpenTelemetry's
 * messaging semantic conventions (docs/messaging/messaging-spans.md): a span
 * is named `{messaging.operation.name} {destination}`; a create is PRODUCER,
 * a process CONSUMER. Attributes of our own live under `leasehold.`.
 */
import type { Attributes } from '@opentelemetry/api';

/** The instrumentation scope our tracer is asked for by (`trace.getTracer`). */
export const TRACER_NAME = 'leasehold';

/** `messaging.system`: job libraries are not in the conventions' list of systems, so ours is our own name. */
export const MESSAGING_SYSTEM = 'leasehold';

export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const ATTR_OPERATION_TYPE = 'messaging.operation.type';
export const ATTR_OPERATION_NAME = 'messaging.operation.name';
export const ATTR_DESTINATION_NAME = 'messaging.destination.name';
export const ATTR_MESSAGE_ID = 'messaging.message.id';
export const ATTR_ERROR_TYPE = 'error.type';
/** The attempt a process span ran (1 for the first). */
export const ATTR_ATTEMPT = 'leasehold.attempt';
/** The fencing token of the attempt's lease. */
export const ATTR_TOKEN = 'leasehold.token';
/** Whether the attempt's failure dead-lettered the job (false when it succeeded or will be retried). */
export const ATTR_DEAD_LETTERED = 'leasehold.dead_lettered';

/** The operations we trace: one span per job submitted, one per attempt run. */
export type Operation = 'create' | 'process';

/** A span's name: the operation, then the queue. */
export function spanName(operation: Operation, destination: string): string {
  return `${operation} ${destination}`;
}

/** The attributes every span of `operation` on the queue `destination` carries from its start. */
export function messagingAttributes(operation: Operation, destination: string): Attributes {
  return {
    [ATTR_MESSAGING_SYSTEM]: MESSAGING_SYSTEM,
    [ATTR_OPERATION_TYPE]: operation,
    [ATTR_OPERATION_NAME]: operation,
    [ATTR_DESTINATION_NAME]: destination,
  };
}

/**
 * `error.type` of a thrown value: an Error's name (low cardinality, as the
 * conventions ask), else `_OTHER`. Never throws: a thrown proxy or getter
 * that throws as it is inspected is `_OTHER` too, so that the code reporting
 * a handler's failure cannot fail in turn.
 */
export function errorType(error: unknown): string {
  try {
    if (error instanceof Error && typeof error.name === 'string') return error.name;
  } catch {
    // Inspected as any other value that is not an Error.
  }
  return '_OTHER';
}
