/**
 * A thread killed at every step of a call, as `worker.terminate()` kills it:
 * under the deterministic scheduler a history is first run whole, then once
 * more for each step of one of its thread 0's calls, ended at that step.
 * Every interleaving up to the kill is the first run's, so the kill lands at
 * each step of that call in turn: inside its claim, its lock hold, its
 * commit, a rebuild it makes. One call of each kind a sweep must kill in,
 * from the first histories whose thread 0 makes one. After each kill, the
 * other thread made all its calls (nothing wedged it) and the queue recovers
 * (./recovery.ts: nothing lost, nothing finished twice, no token twice).
 *
 * Two sweeps: plain histories, and histories of capped groups (the plan's
 * `groups`, as ./caps.test.ts runs them), whose calls are taken only where
 * they move a job of a capped group into or out of RUNNING (or set the cap
 * itself); after those kills the caps must still hold (I25): no count left
 * too high, keeping jobs behind a cap with room, nor too low, letting a poll
 * past it (`expectCapsKept`). A failure prints the options of the kill, which
 * replay it here (LEASEHOLD_SCHEDULE) with every check of its sweep.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Call, Op } from '../../dist/testing/index.js';
import { testSeed } from '../support/helpers.js';
import { replayed } from './plans.js';
import { ScheduledRecorder, type ScheduledBackend, type ScheduledHistory, type ScheduledHistoryOptions } from './recorder.js';
import { cappedAt, expectCapsKept, expectRecovered, groupsOfJobs } from './recovery.js';

/** The calls a kill must land at every step of, in every sweep. */
const MOVES: readonly Op[] = ['submit', 'poll', 'complete', 'fail', 'completeAndPoll', 'extend'];
/**
 * Histories searched for calls of a sweep's kinds by thread 0: the search stops once it has one of each, so
 * a bound well past the usual need costs nothing; a thread 0 that holds a lease to fail is the rarest.
 */
const SEARCH = 400;

interface Sweep {
  name: string;
  /** Calls per thread of its histories, and whether they are of capped groups. */
  calls: number;
  groups: boolean;
  mustKillIn: readonly Op[];
  /** Whether thread 0's call `c` of the history run whole is one to kill in. */
  worthKilling(c: Call, calls: readonly Call[]): boolean;
  /** Kills that once failed, made before the sweep's own: each must still land in its call. */
  regressions: readonly Kill[];
  /** A check after each kill besides `expectRecovered` (first: it names what went wrong), and what the numbers it returns count, summed and printed. */
  alsoCheck?: { check(history: ScheduledHistory, replay: string): Promise<number>; counts: string };
}

const PLAIN: Sweep = {
  name: 'plain',
  calls: 4,
  groups: false,
  mustKillIn: MOVES,
  worthKilling: () => true,
  regressions: [],
};

const CAPPED: Sweep = {
  name: 'capped groups',
  // As ./caps.test.ts's CAPPED_CALLS: enough calls for a group's jobs to pile up against its cap.
  calls: 8,
  groups: true,
  mustKillIn: [...MOVES, 'setGroupConcurrency'],
  worthKilling: (c, calls) => c.result.ok && groupsMoved(c, calls).some((group) => cappedAt(calls, group, c)),
  alsoCheck: { check: expectCapsKept, counts: 'leases of a capped group in the cap checks' },
  regressions: [
    // Killed in the first cap's set between CAPS and the CAPPED bit: the takeover's rebuild left CAPPED clear, and the
    // lock-free polls leased past the cap for good (the rebuild now resyncs them, ConcurrencyTable#resync).
    {
      killed: { seed: 2900665681, backend: 'memory', threads: 2, calls: 8, strategy: 'pct', depth: 2, groups: true, kill: { thread: 0, step: 339 } },
      op: 'setGroupConcurrency',
    },
  ],
};

interface Kill {
  killed: ScheduledHistoryOptions;
  /** The kind of call the kill must land in. */
  op: Op;
}

interface Target {
  options: ScheduledHistoryOptions;
  op: Op;
  /** The steps of thread 0 that the call takes: first and last, counted from 1. */
  first: number;
  last: number;
}

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('a thread killed at any step, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(2, CAPPED.calls);
  afterAll(() => recorder.close());

  describe.each([PLAIN, CAPPED])('of $name histories', (sweep) => {
    const only = replayed();
    const skipped = only !== undefined && (only.backend !== backend || (only.groups === true) !== sweep.groups);
    it.skipIf(skipped)(`leaves a queue that loses nothing and leases nothing twice${sweep.groups ? ', and keeps the caps,' : ''} killed at every step of ${sweep.mustKillIn.join(', ')}`, async () => {
      const kills = only !== undefined ? [{ killed: only, op: undefined }] : await killsOf(sweep, recorder, backend);
      const { alsoCheck } = sweep;
      let counted = 0;
      for (const { killed, op } of kills) {
        const history = await recorder.record(killed);
        const replay = replayHere(killed);
        expect(history.run.killed, replay).toEqual([0]);
        if (op !== undefined) expect(history.killedIn, `the kill at step ${killed.kill!.step} should land in ${op}: ${replay}`).toBe(op);
        if (alsoCheck !== undefined) counted += await alsoCheck.check(history, replay);
        await expectRecovered(history, replay);
      }
      console.log(`[scheduled kills: ${backend}, ${sweep.name}] ${kills.length} kills${alsoCheck === undefined ? '' : `, ${counted} ${alsoCheck.counts}`}`);
    }, 900_000);
  });
});

/** The command that replays a kill in this file, with its sweep's checks (the recorder's `replayCommand` names a suite without the cap check). */
function replayHere(killed: ScheduledHistoryOptions): string {
  return `LEASEHOLD_SCHEDULE='${JSON.stringify(killed)}' npx vitest run test/scheduled/kills.test.ts`;
}

/** The sweep's regressions on `backend`, then a kill at every step of each target call of `sweep`. */
async function killsOf(sweep: Sweep, recorder: ScheduledRecorder, backend: ScheduledBackend): Promise<Kill[]> {
  const targets = await findTargets(sweep, recorder, backend);
  expect(sweep.mustKillIn.filter((op) => !targets.some((t) => t.op === op)), 'calls no history of the search made').toEqual([]);
  console.log(`[scheduled kills: ${backend}, ${sweep.name}] ${targets.map((t) => `${t.op} ${t.last - t.first + 1} steps`).join(', ')}`);
  const regressions = sweep.regressions.filter(({ killed }) => killed.backend === backend);
  return regressions.concat(targets.flatMap(({ options, op, first, last }) => Array.from({ length: last - first + 1 }, (_, i) => ({ killed: { ...options, kill: { thread: 0, step: first + i } }, op }))));
}

/** For each call kind of the sweep, the first call of that kind worth killing thread 0 makes (in a history run whole), and its steps. */
async function findTargets(sweep: Sweep, recorder: ScheduledRecorder, backend: ScheduledBackend): Promise<Target[]> {
  const base = testSeed(`scheduled kills: ${backend}, ${sweep.name}`);
  const targets: Target[] = [];
  for (let i = 0; i < SEARCH && targets.length < sweep.mustKillIn.length; i++) {
    const options: ScheduledHistoryOptions = { seed: (base + i) >>> 0, backend, threads: 2, calls: sweep.calls, strategy: 'pct', depth: 2 };
    if (sweep.groups) options.groups = true;
    const history = await recorder.record(options);
    const steps = history.callSteps[0]!;
    history.calls
      .filter((c) => c.thread === 0)
      .forEach((c, row) => {
        const { op } = c.call;
        const first = steps[2 * row]! + 1;
        const last = steps[2 * row + 1]!;
        if (sweep.mustKillIn.includes(op) && last >= first && !targets.some((t) => t.op === op) && sweep.worthKilling(c, history.calls)) targets.push({ options, op, first, last });
      });
  }
  return targets;
}

/** The groups whose jobs a call moves into or out of RUNNING, or whose cap it sets (a submit: its job's group, which it may catch up). */
function groupsMoved(c: Call, calls: readonly Call[]): (string | undefined)[] {
  const { call } = c;
  const groupOf = groupsOfJobs(calls);
  switch (call.op) {
    case 'submit':
    case 'setGroupConcurrency':
      return [call.group];
    case 'poll':
      return [leased(c, groupOf)];
    case 'completeAndPoll':
      return [groupOf(call.jobId), leased(c, groupOf)];
    case 'complete':
    case 'fail':
    case 'extend':
      return [groupOf(call.jobId)];
    default:
      return [];
  }
}

function leased(c: Call, groupOf: (jobId: string) => string | undefined): string | undefined {
  const lease = c.result.ok ? (c.result.value as { jobId: string } | undefined) : undefined;
  return lease === undefined ? undefined : groupOf(lease.jobId);
}
