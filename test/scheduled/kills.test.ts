/**
 * A thread killed at every step of a call, as `worker.terminate()` kills it:
 * under the deterministic scheduler a history is first run whole, then once
 * more for each step of one of its thread 0's calls, ended at that step.
 * Every interleaving up to the kill is the first run's, so the kill lands at
 * each step of that call in turn: inside its claim, its lock hold, its
 * commit, a rebuild it makes. One call of each kind of MUST_KILL_IN, from the
 * first histories whose thread 0 makes one. After each kill, the other thread
 * made all its calls (nothing wedged it) and the queue recovers
 * (./recovery.ts: nothing lost, nothing finished twice, no token twice).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Op } from '../../dist/testing/index.js';
import { testSeed } from '../support/helpers.js';
import { ScheduledRecorder, replayCommand, type ScheduledBackend, type ScheduledHistoryOptions } from './recorder.js';
import { expectRecovered } from './recovery.js';

const CALLS = 4;
/** The calls a kill must land at every step of. */
const MUST_KILL_IN: readonly Op[] = ['submit', 'poll', 'complete', 'fail', 'completeAndPoll', 'extend'];
/**
 * Histories searched for calls of those kinds by thread 0: the search stops at the first of each, so a
 * bound well past the usual need costs nothing; a thread 0 that holds a lease to fail is the rarest.
 */
const SEARCH = 400;

interface Target {
  options: ScheduledHistoryOptions;
  op: Op;
  /** The steps of thread 0 that the call takes: first and last, counted from 1. */
  first: number;
  last: number;
}

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('a thread killed at any step, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(2, CALLS);
  afterAll(() => recorder.close());

  it(`leaves a queue that loses nothing and leases nothing twice, killed at every step of ${MUST_KILL_IN.join(', ')}`, async () => {
    const base = testSeed(`scheduled kills: ${backend}`);
    const targets = await findTargets(recorder, base, backend);
    expect(MUST_KILL_IN.filter((op) => !targets.some((t) => t.op === op)), 'calls no history of the search made').toEqual([]);
    let kills = 0;
    for (const { options, op, first, last } of targets) {
      for (let step = first; step <= last; step++) {
        const killed: ScheduledHistoryOptions = { ...options, kill: { thread: 0, step } };
        const history = await recorder.record(killed);
        expect(history.run.killed, replayCommand(killed)).toEqual([0]);
        expect(history.killedIn, `the kill at step ${step} should land in ${op}: ${replayCommand(killed)}`).toBe(op);
        await expectRecovered(history, replayCommand(killed));
        kills++;
      }
    }
    console.log(`[scheduled kills: ${backend}] ${kills} kills: ${targets.map((t) => `${t.op} ${t.last - t.first + 1} steps`).join(', ')}`);
  }, 900_000);
});

/** For each call kind, the first call of that kind thread 0 makes (in a history run whole), and its steps. */
async function findTargets(recorder: ScheduledRecorder, base: number, backend: ScheduledBackend): Promise<Target[]> {
  const targets: Target[] = [];
  for (let i = 0; i < SEARCH && targets.length < MUST_KILL_IN.length; i++) {
    const options: ScheduledHistoryOptions = { seed: (base + i) >>> 0, backend, threads: 2, calls: CALLS, strategy: 'pct', depth: 2 };
    const history = await recorder.record(options);
    const steps = history.callSteps[0]!;
    const ops = history.calls.filter((c) => c.thread === 0).map((c) => c.call.op);
    ops.forEach((op, row) => {
      const first = steps[2 * row]! + 1;
      const last = steps[2 * row + 1]!;
      if (MUST_KILL_IN.includes(op) && last >= first && !targets.some((t) => t.op === op)) targets.push({ options, op, first, last });
    });
  }
  return targets;
}
