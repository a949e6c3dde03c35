/**
 * What a queue must be after a history in which a thread was killed or
 * stalled past the patience: no lease handed out twice at once
 * (`doubleLeases`), no job completed twice, and once the clock has passed
 * every lease and backoff, every job ever acknowledged leased and finished,
 * or already finished (or evicted, as only finished jobs are): nothing left
 * PENDING or RUNNING (`account`, as `leasehold stress` checks its histories).
 * Of a history of capped groups, also that every cap still holds
 * (`expectCapsKept`).
 */
import { expect } from 'vitest';
import { JobStatus, type JobQueue, type Lease, type ManualClock } from '../../dist/index.js';
import { account } from '../../dist/cli/stress/recorder.js';
import { checkHistory, doubleLeases, explainFailure, type Call, type Mode } from '../../dist/testing/index.js';
import { replayCommand, type ScheduledHistory } from './recorder.js';

/** A history with a kill, a stall or a hold keeps the whole contract: an order the checker allows (`mode`), and a queue that recovers. */
export async function expectContractKept(history: ScheduledHistory, mode: Mode = 'relaxed-poll'): Promise<void> {
  const { options, calls, setup } = history;
  const replay = replayCommand(options);
  const verdict = checkHistory(calls, setup, mode);
  if (!verdict.ok) expect.fail(`${explainFailure(JSON.stringify(options), calls, setup, mode)}\nreplay: ${replay}`);
  await expectRecovered(history, replay);
}

export async function expectRecovered(history: ScheduledHistory, replay: string): Promise<void> {
  const { queue, clock, calls } = history;
  expect(doubleLeases(calls), `leased twice at once: ${replay}`).toEqual([]);
  const completed = calls.filter(isCompleteThatWorked).map((c) => (c.call as { jobId: string }).jobId);
  expect(completed.filter((id, i) => completed.indexOf(id) !== i), `jobs completed twice: ${replay}`).toEqual([]);
  const { unaccounted } = await account(queue, calls, clock);
  expect(unaccounted, `jobs lost or left behind: ${replay}`).toEqual([]);
  const stats = queue.stats();
  expect({ pending: stats.pending, running: stats.running }, replay).toEqual({ pending: 0, running: 0 });
}

function isCompleteThatWorked(c: Call): boolean {
  return (c.call.op === 'complete' || c.call.op === 'completeAndPoll') && c.result.ok;
}

/** A lease the cap check takes outlives every advance of its rounds: only its complete gives its place back. */
const CHECK_LEASE_MILLIS = 1_000_000_000;
/** Past every lease of the history, every runAt and every backoff. */
const PAST_EVERY_DEADLINE = 1_000_000;

/**
 * The group caps the queue has once the history is over still hold (I25):
 * with the clock past every lease (the dead thread's are reclaimed, as the
 * drain of `expectRecovered` reclaims them) and every backoff, rounds of
 * polls lease each capped group's ready jobs up to its cap and never past
 * it, and once a round's leases are completed the next round leases up to
 * the cap again: first the jobs the history left, then one more fresh job
 * than its cap in each capped group in turn (so that a count left wrong
 * shows even where the history left no job of its group). So no group's
 * RUNNING count leaked up (jobs held behind a cap with room, for good) nor
 * down (more RUNNING than the cap), however the kill or stall left the moves
 * into and out of RUNNING. A count one of them left too high may be put
 * right by the first poll that finds nothing: it waits out the lock-free
 * calls in flight, and one that stays in flight past the patience (its
 * thread died) is repaired by a rebuild, which recounts (I25), as every
 * user's poll would. Returns the leases made of jobs whose group is capped.
 * Leaves every job finished: call `expectRecovered` after it.
 */
export async function expectCapsKept(history: ScheduledHistory, replay: string): Promise<number> {
  const { queue, calls } = history;
  const caps = queue.groupConcurrencyCaps();
  const submitted = groupsOfJobs(calls);
  const fresh = new Map<string, string>();
  const groupOf = (jobId: string): string | undefined => fresh.get(jobId) ?? submitted(jobId);
  let cappedLeases = leaseInRounds(history, groupOf, `the jobs the history left: ${replay}`);
  for (const { group, max } of caps) {
    for (let i = 0; i <= max; i++) fresh.set(queue.submit('cap-check', null, { group }), group);
    cappedLeases += leaseInRounds(history, groupOf, `${max + 1} fresh jobs of ${group}: ${replay}`);
  }
  return cappedLeases;
}

/** Leases and completes every job in rounds, each capped group's up to its cap a round; the leases of capped groups. */
function leaseInRounds({ queue, clock }: ScheduledHistory, groupOf: (jobId: string) => string | undefined, what: string): number {
  const caps = queue.groupConcurrencyCaps();
  let cappedLeases = 0;
  for (let round = 1; ; round++) {
    const leases = leaseEveryReady(queue, clock);
    const waiting = queue.jobs({ status: JobStatus.PENDING, limit: 1_000 }).jobs.map((job) => job.id);
    for (const { group, max } of caps) {
      const leased = leases.filter((lease) => groupOf(lease.jobId) === group).length;
      cappedLeases += leased;
      expect(leased, `round ${round} leased more jobs of ${group} than its cap of ${max}, of ${what}`).toBeLessThanOrEqual(max);
      if (leased < max) expect(waiting.filter((id) => groupOf(id) === group), `jobs of ${group} held back with ${leased} of its ${max} places taken in round ${round}, of ${what}`).toEqual([]);
    }
    if (leases.length === 0) return cappedLeases;
    for (const lease of leases) queue.complete(lease.jobId, lease.token);
  }
}

/** Polls until nothing more is ready, the clock moved past every deadline before each pass: a retry's backoff passes too. */
function leaseEveryReady(queue: JobQueue, clock: ManualClock): Lease[] {
  const leases: Lease[] = [];
  for (let before = -1; before < leases.length; ) {
    before = leases.length;
    clock.advance(PAST_EVERY_DEADLINE);
    for (let lease = queue.poll('cap-check', CHECK_LEASE_MILLIS); lease !== undefined; lease = queue.poll('cap-check', CHECK_LEASE_MILLIS)) leases.push(lease);
  }
  return leases;
}

/**
 * The group each job of a history was submitted in (undefined: none). A job
 * no submit returned is the killed thread's pending submit's (it placed the
 * job before it was ended): there is at most one.
 */
export function groupsOfJobs(calls: readonly Call[]): (jobId: string) => string | undefined {
  const groups = new Map<string, string | undefined>();
  let pendingGroup: string | undefined;
  for (const { call, result, pending } of calls) {
    if (call.op !== 'submit') continue;
    if (pending === true) pendingGroup = call.group;
    else if (result.ok) groups.set(result.value as string, call.group);
  }
  return (jobId) => (groups.has(jobId) ? groups.get(jobId) : pendingGroup);
}

/** Whether `group` is capped as `c` runs: by the last cap call on it that returned before `c` began (or by `c` itself), if that call set a number. */
export function cappedAt(calls: readonly Call[], group: string | undefined, c: Call): boolean {
  const caps = calls.filter((cap) => cap.call.op === 'setGroupConcurrency' && cap.call.group === group && cap.result.ok && (cap === c || cap.resp < c.inv));
  const last = caps.at(-1)?.call as { max: number | null } | undefined;
  return group !== undefined && last !== undefined && last.max !== null;
}
