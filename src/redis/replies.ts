/**
 * What the scripts' replies mean: leases and job views, from the flat arrays
 * Lua returns (see scripts.ts for each script's reply).
 */
import { JobStatus, type JobView, type Lease } from '../types.js';
import { parsedHeaders } from '../validate/job-input.js';
import { parsedResult } from '../validate/outcome.js';

/** Fields per lease in a poll's reply: n, token, type, payload, attempt, maxAttempts, leaseUntil, timeout ('': none), headers ('': none), waitMillis. */
const LEASE_FIELDS = 10;

/** The leases in `reply` from index `from` on (a poll's tail). */
export function leasesIn(reply: readonly unknown[], from: number): Lease[] {
  const leases: Lease[] = [];
  for (let i = from; i + LEASE_FIELDS <= reply.length; i += LEASE_FIELDS) {
    const [n, token, type, payload, attempt, maxAttempts, leaseUntil, timeout, headers, waitMillis] = reply.slice(i, i + LEASE_FIELDS);
    leases.push({
      jobId: `J${n}`, token: Number(token), type: String(type), payload: String(payload), attempt: Number(attempt),
      maxAttempts: Number(maxAttempts), leaseUntil: Number(leaseUntil), timeoutMillis: timeout === '' ? null : Number(timeout),
      headers: parsedHeaders(headers as string), waitMillis: Number(waitMillis),
    });
  }
  return leases;
}

/** A job's view from its hash, as HGETALL returns it (field, value, ...); a job without a maxAttempts of its own has the policy's. */
export function toView(id: string, pairs: readonly string[], policyMaxAttempts: number): JobView {
  const f = new Map<string, string>();
  for (let i = 0; i < pairs.length; i += 2) f.set(pairs[i]!, pairs[i + 1]!);
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
    payload: f.get('payload')!,
    leaseUntil: status === JobStatus.RUNNING ? Number(f.get('leaseUntil')) : null,
    workerId: f.get('workerId') ?? null,
    result: status === JobStatus.SUCCEEDED ? parsedResult(f.get('result')) : undefined,
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
  };
}

/** A time field of a job's hash; null when absent. */
function timeOf(text: string | undefined): number | null {
  return text === undefined ? null : Number(text);
}
