/**
 * bull-board answers an error thrown by an adapter with the error's
 * `statusCode` (else 500) and its message: a leasehold refusal is the
 * caller's doing, so it gets the 4xx its class means.
 */
import { IllegalStateError, InvalidArgumentError, JobNotFoundError, JobQueueError, UnsupportedOperationError } from '../errors.js';

const STATUS_OF_ERROR: readonly [new (...args: never[]) => JobQueueError, number][] = [
  [InvalidArgumentError, 400],
  [JobNotFoundError, 404],
  [UnsupportedOperationError, 405],
  [IllegalStateError, 409],
];

/** `run`, with a leasehold refusal it throws marked with its HTTP status. */
export async function answerable<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const status = STATUS_OF_ERROR.find(([errorClass]) => error instanceof errorClass)?.[1];
    if (status !== undefined) Object.assign(error as JobQueueError, { statusCode: status });
    throw error;
  }
}
