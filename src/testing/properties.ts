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
 * a line naming both calls. Three signs, each proof on its own:
 *
 * - one token handed out twice;
 * - one job leased twice with the same attempt number, with no retryDead or
 *   release of that job that could have run in between (a new claim counts
 *   an attempt; retryDead sets the count back, a release uncounts its own);
 * - a lease's token accepted (complete, fail, extend, completeAndPoll) by a
 *   call invoked after a later lease of the same job was handed out: the
 *   queue still took the first lease for current once the second existed.
 */
export function doubleLeases(calls: readonly Call[]): string[] {
  const sorted = [...calls].sort((a, b) => a.inv - b.inv);
  const leases = sorted.flatMap((call) => {
    const lease = leaseOf(call);
    return lease === undefined ? [] : [{ call, lease }];
  });
  const found: string[] = [];
  const byToken = new Map<number, Call>();
  for (const { call, lease } of leases) {
    const sameToken = byToken.get(lease.token);
    if (sameToken !== undefined) found.push(`token ${lease.token} handed out twice: ${formatCall(sameToken)} and ${formatCall(call)}`);
    byToken.set(lease.token, call);
  }
  leases.forEach((a, i) => {
    for (const b of leases.slice(i + 1)) {
      if (b.lease.jobId !== a.lease.jobId || b.lease.token === a.lease.token) continue;
      if (b.lease.attempt === a.lease.attempt && !retriedBetween(sorted, a.call, b.call) && !retriedBetween(sorted, b.call, a.call)) {
        found.push(`${a.lease.jobId} attempt ${a.lease.attempt} leased twice: ${formatCall(a.call)} and ${formatCall(b.call)}`);
      }
      // Which of the two came first in real time is known only when their calls did not overlap.
      for (const [first, later] of [[a, b], [b, a]] as const) {
        if (responseOf(first.call) >= later.call.inv && responseOf(later.call) >= first.call.inv) continue;
        if (responseOf(first.call) < later.call.inv) {
          const use = sorted.find((u) => u.inv > responseOf(later.call) && u.result.ok && usesToken(u, first.lease.jobId, first.lease.token));
          if (use !== undefined) found.push(`${first.lease.jobId}: ${formatCall(use)} accepted the token of ${formatCall(first.call)} after ${formatCall(later.call)} leased the job again`);
        }
      }
    }
  });
  return found;
}

/** A retryDead or release of the job that may fall after `first`'s lease and before `later`'s: the attempt count goes back there. */
function retriedBetween(calls: readonly Call[], first: Call, later: Call): boolean {
  const jobId = (leaseOf(first) as LeaseResult).jobId;
  return calls.some(
    (r) => (r.call.op === 'retryDead' || r.call.op === 'release') && r.call.jobId === jobId && (r.result.ok || r.pending === true) && responseOf(r) > first.inv && r.inv < responseOf(later),
  );
}

function usesToken(call: Call, jobId: string, token: number): boolean {
  const c = call.call;
  return (c.op === 'complete' || c.op === 'fail' || c.op === 'extend' || c.op === 'completeAndPoll' || c.op === 'release') && c.jobId === jobId && c.token === token;
}

function leaseOf(call: Call): LeaseResult | undefined {
  if (!call.result.ok || (call.call.op !== 'poll' && call.call.op !== 'completeAndPoll')) return undefined;
  return (call.result.value ?? undefined) as LeaseResult | undefined;
}
