/**
 * What the scripts' replies mean: leases and job views, from the flat arrays
 * Lua returns (see scripts.ts for each script's reply).
 *
 * These replies may hold binary values (a payload or result stored as raw
 * bytes, which the job's hash and a lease's `binary` field mark), so they are
 * read raw, each bulk string a Buffer (CommandRunner#run's `raw`): a marked
 * value becomes a Uint8Array of its bytes, every other one text, decoded as
 * ioredis decodes any reply (Buffer#toString, UTF-8), at the same cost.
 */
import { JobStatus, type JobView, type Lease } from '../types.js';
import { parsedHeaders } from '../validate/job-input.js';
import { parsedResult } from '../validate/outcome.js';

/**
 * Elements per lease in a poll's reply: type, payload, headers ('': none), and its numbers in one text,
 * comma-separated: n, token, attempt, maxAttempts, leaseUntil, timeout ('': none), waitMillis, binary
 * ('1': the payload is raw bytes). Four elements rather than eleven: each costs the script a conversion
 * and the client a bulk string to decode.
 */
export const LEASE_FIELDS = 4;

/** An element of a raw reply as text: a bulk string (a Buffer) decoded as UTF-8, an integer as its digits. */
export function textOf(value: unknown): string {
  return value instanceof Buffer ? value.toString() : String(value);
}

/** An element of a raw reply as a number: an integer as it is, a bulk string's text read as one. */
export function numberOf(value: unknown): number {
  return typeof value === 'number' ? value : Number(textOf(value));
}

/** A binary value of a raw reply: its bytes in a Uint8Array of their own (the reply's Buffer may share its memory with others). */
function bytesOf(value: unknown): Uint8Array {
  return new Uint8Array(value as Buffer);
}

/** The leases in raw `reply` from index `from` on (a poll's tail). */
export function leasesIn(reply: readonly unknown[], from: number): Lease[] {
  const leases: Lease[] = [];
  for (let i = from; i + LEASE_FIELDS <= reply.length; i += LEASE_FIELDS) {
    const [n, token, attempt, maxAttempts, leaseUntil, timeout, waitMillis, binary] = textOf(reply[i + 3]).split(',') as [string, string, string, string, string, string, string, string];
    leases.push({
      jobId: `J${n}`, token: Number(token), type: textOf(reply[i]), payload: binary === '1' ? bytesOf(reply[i + 1]) : textOf(reply[i + 1]),
      attempt: Number(attempt), maxAttempts: Number(maxAttempts), leaseUntil: Number(leaseUntil), timeoutMillis: timeout === '' ? null : Number(timeout),
      headers: parsedHeaders(textOf(reply[i + 2])), waitMillis: Number(waitMillis),
    });
  }
  return leases;
}

/**
 * A job's view from its hash, as HGETALL returns it raw (field, value, ...); a job without a maxAttempts of its own has the policy's.
 * Its payload and result are bytes where the hash marks them binary (binaryPayload, binaryResult), else text.
 */
export function toView(id: string, pairs: readonly unknown[], policyMaxAttempts: number): JobView {
  const f = new Map<string, string>();
  let payload: unknown, result: unknown;
  for (let i = 0; i < pairs.length; i += 2) {
    const field = textOf(pairs[i]);
    // The two that may be bytes stay raw until the marks are read.
    if (field === 'payload') payload = pairs[i + 1];
    else if (field === 'result') result = pairs[i + 1];
    else f.set(field, textOf(pairs[i + 1]));
  }
  const status = f.get('status') as JobStatus;
  return {
    id,
    type: f.get('type')!,
    priority: Number(f.get('priority')),
    status,
    attempts: Number(f.get('attempts')),
    // Absent in a job submitted before the field, 0 in one submitted without it: the policy's.
    maxAttempts: Number(f.get('maxAttempts') ?? 0) || policyMaxAttempts,
    nextRunAt: Number(f.get('runAt')),
    lastError: f.get('lastError') ?? null,
    payload: f.has('binaryPayload') ? bytesOf(payload) : textOf(payload),
    leaseUntil: status === JobStatus.RUNNING ? Number(f.get('leaseUntil')) : null,
    workerId: f.get('workerId') ?? null,
    result: status !== JobStatus.SUCCEEDED || result === undefined ? undefined : parsedResult(f.has('binaryResult') ? bytesOf(result) : textOf(result)),
    key: f.get('key') ?? null,
    timeoutMillis: f.has('timeout') ? Number(f.get('timeout')) : null,
    headers: parsedHeaders(f.get('headers')),
    // Absent in a job stored before the field: unknown. startedAt stays through release, expiry and retries (the latest lease's).
    submittedAt: timeOf(f.get('submittedAt')),
    startedAt: timeOf(f.get('startedAt')),
    finishedAt: status === JobStatus.SUCCEEDED || status === JobStatus.DEAD || status === JobStatus.CANCELLED ? timeOf(f.get('finishedAt')) : null,
    // Only the latest lease's: one reported under an earlier token belongs to an earlier attempt.
    progress: f.has('progress') && Number(f.get('progressToken')) === Number(f.get('token')) ? Number(f.get('progress')) : undefined,
    group: f.get('group') ?? null,
    // A flow's (includes/flows.lua): a child names its parent; a parent counts, while it waits, its children not ended.
    ...(f.has('parent') ? { parentId: `J${f.get('parent')!}` } : {}),
    ...(status === JobStatus.PENDING && Number(f.get('waiting') ?? 0) > 0 ? { waitingChildren: Number(f.get('waiting')) } : {}),
  };
}

/** childResults' raw reply (child-results.lua): each child's result by its id, in submission order; one without a result maps to undefined. */
export function childResultsIn(reply: readonly unknown[]): Record<string, unknown> {
  const results: Record<string, unknown> = {};
  for (let i = 1; i + 3 <= reply.length; i += 3) {
    const kind = textOf(reply[i + 2]);
    results[`J${textOf(reply[i])}`] = kind === '' ? undefined : parsedResult(kind === 'b' ? bytesOf(reply[i + 1]) : textOf(reply[i + 1]));
  }
  return results;
}

/** A time field of a job's hash; null when absent. */
function timeOf(text: string | undefined): number | null {
  return text === undefined ? null : Number(text);
}
