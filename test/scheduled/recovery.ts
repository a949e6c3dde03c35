/**
 * What a queue must be after a history in which a thread was killed or
 * stalled past the patience: no lease handed out twice at once
 * (`doubleLeases`), no job completed twice, and once the clock has passed
 * every lease and backoff, every job ever acknowledged leased and finished,
 * or already finished (or evicted, as only finished jobs are): nothing left
 * PENDING or RUNNING (`account`, as `leasehold stress` checks its histories).
 */
import { expect } from 'vitest';
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
