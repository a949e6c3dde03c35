/**
 * What a queue must be after a history in which a thread was killed or
 * stalled past the patience: once the clock has passed every lease and
 * backoff, every job ever acknowledged is leased and finished, or already
 * finished (or evicted, as only finished jobs are); none is finished twice;
 * no token is handed out twice; nothing is left PENDING or RUNNING.
 */
import { expect } from 'vitest';
import type { JobQueue } from '../../dist/index.js';
import type { Call } from '../history/history.js';
import type { ScheduledHistory } from './recorder.js';

export function expectRecovered(history: ScheduledHistory, replay: string): void {
  const { queue, clock, calls } = history;
  // Past every lease and backoff of the history: whatever the killed thread held or left half-done is due.
  clock.advance(3_600_000);
  const finishedByDrain = drain(queue);
  const stats = queue.stats();
  expect({ pending: stats.pending, running: stats.running }, replay).toEqual({ pending: 0, running: 0 });
  for (const id of acknowledged(calls)) {
    let status: string;
    try {
      status = queue.view(id).status;
    } catch (error) {
      // Evicted for room: finished, as only finished jobs are.
      expect((error as Error).message, `${id}: ${replay}`).toMatch(/evicted/);
      continue;
    }
    expect(['SUCCEEDED', 'DEAD', 'CANCELLED'], `${id} is ${status}: ${replay}`).toContain(status);
  }
  const finished = [...calls.filter((c) => isCompleteThatWorked(c)).map((c) => (c.call as { jobId: string }).jobId), ...finishedByDrain];
  expect(finished.filter((id, i) => finished.indexOf(id) !== i), `jobs completed twice: ${replay}`).toEqual([]);
  const tokens = calls.flatMap(leaseOf).map((l) => `${l.jobId}#${l.token}`);
  expect(tokens.filter((t, i) => tokens.indexOf(t) !== i), `tokens handed out twice: ${replay}`).toEqual([]);
}

/** Leases every job there is to lease, and completes it: the jobs it completed. */
function drain(queue: JobQueue): string[] {
  const done: string[] = [];
  for (let lease = queue.poll('recovery', 3_600_000); lease !== undefined; lease = queue.poll('recovery', 3_600_000)) {
    queue.complete(lease.jobId, lease.token);
    done.push(lease.jobId);
    if (done.length > 1_000) throw new Error('the drain does not end');
  }
  return done;
}

function acknowledged(calls: readonly Call[]): string[] {
  return calls.filter((c) => c.call.op === 'submit' && c.result.ok).map((c) => (c.result as { value: string }).value);
}

function isCompleteThatWorked(c: Call): boolean {
  return (c.call.op === 'complete' || c.call.op === 'completeAndPoll') && c.result.ok;
}

function leaseOf(c: Call): { jobId: string; token: number }[] {
  if ((c.call.op !== 'poll' && c.call.op !== 'completeAndPoll') || !c.result.ok || c.result.value === undefined) return [];
  return [c.result.value as { jobId: string; token: number }];
}
