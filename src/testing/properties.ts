/**
 * Plain properties of a history, cheaper than the checker and named for what
 * they prove: how much the calls really overlapped, and whether one job was
 * leased twice at once.
 */
import { responseOf } from './checker.js';
import { formatCall, type Call, type LeaseResult } from './history.js';

/** Calls whose interval overlaps a call of another thread: how much of the history really ran at once. */
export function overlappingCalls(calls: readonly Call[]): number {
  return calls.filter((a) => calls.some((b) => b.thread !== a.thread && a.inv < responseOf(b) && b.inv < responseOf(a))).length;
}

/**
 * Leases that break "a job is never leased to two workers at once", each as
 * a line naming both calls: two leases of one job with the same attempt
 * number (a second claim without the first lease ending, which counts an
 * attempt), or one token handed out twice.
 */
export function doubleLeases(calls: readonly Call[]): string[] {
  const byAttempt = new Map<string, Call>();
  const byToken = new Map<number, Call>();
  const found: string[] = [];
  for (const call of [...calls].sort((a, b) => a.inv - b.inv)) {
    const lease = leaseOf(call);
    if (lease === undefined) continue;
    const key = `${lease.jobId}#${lease.attempt}`;
    const sameAttempt = byAttempt.get(key);
    if (sameAttempt !== undefined) found.push(`${lease.jobId} attempt ${lease.attempt} leased twice: ${formatCall(sameAttempt)} and ${formatCall(call)}`);
    const sameToken = byToken.get(lease.token);
    if (sameToken !== undefined) found.push(`token ${lease.token} handed out twice: ${formatCall(sameToken)} and ${formatCall(call)}`);
    byAttempt.set(key, call);
    byToken.set(lease.token, call);
  }
  return found;
}

function leaseOf(call: Call): LeaseResult | undefined {
  if (!call.result.ok || (call.call.op !== 'poll' && call.call.op !== 'completeAndPoll')) return undefined;
  return (call.result.value ?? undefined) as LeaseResult | undefined;
}
