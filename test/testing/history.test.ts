/**
 * Concurrent histories of the real queue (`dist/`), every one checked: 2, 3
 * and 4 worker threads attached to one JobQueue on one shared ManualClock make
 * seeded random calls at once (submit, poll, complete, fail, extend,
 * completeAndPoll, cancel, retryDead, view, stats, and clock moves, so leases
 * expire and delays run out inside histories), recorded by the recorder of
 * `leasehold stress` (src/cli/stress/); the checker of `leasehold/testing`
 * must find an order of each history that the model
 * allows, in the mode docs/concurrency.md states for this queue.
 *
 * Thread timing is not reproducible, so a failure prints the seed (which
 * replays the calls each thread chooses: LEASEHOLD_SEED=<seed>) and the
 * minimal failing history itself, which is the evidence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StressRecorder, type RecordedHistory } from '../../dist/cli/stress/recorder.js';
import { checkHistory, doubleLeases, explainFailure, mayRunOutInFlight, overlappingCalls, type Call, type Mode } from '../../dist/testing/index.js';
import { testSeed } from '../support/helpers.js';

/**
 * The mode the queue of `dist/` promises (docs/concurrency.md): relaxed-poll,
 * since the worker path is lock-free (tokens come from per-thread blocks, a
 * poll races the others' claims). The lock-based core promised linearizable;
 * this one line and that page change together.
 */
const PROMISED: Mode = 'relaxed-poll';
const MAX_CALLS = 10;
/**
 * LEASEHOLD_HISTORY_SCALE=n records n times as many histories (a stress run:
 * the races rare enough to show once in 100,000 histories need it).
 */
const SCALE = historyScale(process.env['LEASEHOLD_HISTORY_SCALE']);
/** Generous: a batch takes about 10 s alone on 2 cores, and `npm test` runs other files beside it. */
const BATCH_TIMEOUT = 180_000 * SCALE;

function historyScale(text: string | undefined): number {
  if (text === undefined || text === '') return 1;
  const scale = Number(text);
  if (!Number.isSafeInteger(scale) || scale < 1) throw new Error(`LEASEHOLD_HISTORY_SCALE must be a whole number from 1, got ${JSON.stringify(text)}`);
  return scale;
}

interface Tally {
  histories: number;
  calls: number;
  /** Calls that overlapped a call of another thread. */
  overlapping: number;
  /** Histories with at least one such overlap. */
  concurrent: number;
  /** Leases that may have run out while the call that made them was in flight: the checker pins them (rule 5). */
  pinned: number;
  /** What the calls returned, by kind ("poll lease", "complete ERR_STALE_LEASE", ...), with how often. */
  reached: Map<string, number>;
}

/** What a call returned, as a kind; a lease of a later attempt and a view of an expired lease count as their own kinds too. */
function kindsOf(c: Call): string[] {
  const { op } = c.call;
  if (!c.result.ok) return [`${op} ${c.result.code}`];
  const value = c.result.value as { attempt?: number; lastError?: string | null } | undefined;
  if (op === 'poll' || op === 'completeAndPoll') {
    if (value === undefined) return [`${op} nothing`];
    return value.attempt! > 1 ? [`${op} lease`, 'lease of a retry'] : [`${op} lease`];
  }
  if (op === 'view' && value!.lastError === 'lease expired') return ['view ok', 'view of an expired lease'];
  return [`${op} ok`];
}

/** Kinds every batch of histories must reach, or it proves less than it claims. */
const MUST_REACH = [
  'submit ok', 'submit ERR_QUEUE_FULL', 'poll lease', 'poll nothing', 'lease of a retry',
  'complete ok', 'complete ERR_STALE_LEASE', 'complete ERR_JOB_NOT_FOUND', 'fail ok', 'fail ERR_STALE_LEASE',
  'extend ok', 'extend ERR_STALE_LEASE', 'completeAndPoll lease', 'completeAndPoll nothing', 'completeAndPoll ERR_STALE_LEASE',
  'cancel ok', 'cancel ERR_ILLEGAL_STATE', 'retryDead ok', 'retryDead ERR_ILLEGAL_STATE',
  'view ok', 'view of an expired lease', 'view ERR_JOB_NOT_FOUND', 'stats ok', 'advance ok',
];

/** Records `count` histories on `recorder` and checks each in every mode of `modes` as it comes; throws with the first that fails. */
async function recordAndCheck(recorder: StressRecorder, name: string, count: number, modes: readonly Mode[]): Promise<Tally> {
  const base = testSeed(`history: ${name}`);
  const tally: Tally = { histories: 0, calls: 0, overlapping: 0, concurrent: 0, pinned: 0, reached: new Map() };
  for (let i = 0; i < count; i++) {
    const history = await recorder.record((base + i) >>> 0);
    for (const mode of modes) {
      const verdict = checkHistory(history.calls, history.setup, mode);
      if (!verdict.ok) expect.fail(explainFailure(`[history: ${name}] seed ${history.seed} (LEASEHOLD_SEED=${base}, history ${i})`, history.calls, history.setup, mode));
    }
    // The plain properties too: no job leased twice at once, and after a drain every submitted job finished (or was evicted).
    expect(doubleLeases(history.calls), `[history: ${name}] seed ${history.seed}`).toEqual([]);
    expect(history.unaccounted, `[history: ${name}] seed ${history.seed}`).toEqual([]);
    const o = overlappingCalls(history.calls);
    tally.histories++;
    tally.calls += history.calls.length;
    tally.overlapping += o;
    if (o > 0) tally.concurrent++;
    tally.pinned += history.calls.filter((c) => mayRunOutInFlight(c, history.calls, history.setup.start)).length;
    for (const kind of history.calls.flatMap(kindsOf)) tally.reached.set(kind, (tally.reached.get(kind) ?? 0) + 1);
  }
  console.log(`[history: ${name}] ${tally.histories} histories, ${tally.calls} calls, ${tally.overlapping} of them overlapping another thread's, ${tally.concurrent} histories with overlaps, ${tally.pinned} leases that may have run out while their call was in flight`);
  console.log(`[history: ${name}] reached: ${[...tally.reached].sort().map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  return tally;
}

describe.each([
  { threads: 2, histories: 800 * SCALE },
  { threads: 3, histories: 800 * SCALE },
  { threads: 4, histories: 400 * SCALE },
])('histories of $threads threads on one queue', ({ threads, histories }) => {
  let recorder: StressRecorder;
  beforeAll(() => {
    recorder = new StressRecorder({ threads, maxCalls: MAX_CALLS, backend: 'memory' });
  });
  afterAll(() => recorder.close());

  it(`finds a ${PROMISED} order for every one of ${histories} recorded histories, also accepted by the relaxed mode`, async () => {
    const tally = await recordAndCheck(recorder, `${threads} threads`, histories, [PROMISED, 'relaxed-poll']);
    expect(tally.histories).toBe(histories);
    expect(MUST_REACH.filter((kind) => !tally.reached.has(kind)), 'kinds of results no history reached').toEqual([]);
    // Not a run of one thread at a time: calls of different threads did overlap (how often depends on the machine's load).
    expect(tally.concurrent, 'histories in which calls of two threads overlapped').toBeGreaterThan(histories / 100);
  }, BATCH_TIMEOUT);
});

describe('a queue that hands out the second-best job', () => {
  let recorder: StressRecorder;
  beforeAll(() => {
    recorder = new StressRecorder({ threads: 3, maxCalls: MAX_CALLS, backend: 'memory', wrapper: new URL('../fixtures/history-broken-queue.mjs', import.meta.url).href });
  });
  afterAll(() => recorder.close());

  // All but a rare history that a concurrent clock move, cancel or claim can explain: the queue's call there was legal.
  it('is caught in nearly every history where it did so, in both modes', async () => {
    const base = testSeed('history: broken queue');
    const misbehaving: RecordedHistory[] = [];
    for (let i = 0; i < 150; i++) {
      const history = await recorder.record((base + i) >>> 0);
      if (history.misbehaved > 0) misbehaving.push(history);
    }
    expect(misbehaving.length, 'histories in which the wrapper skipped the best job').toBeGreaterThan(30);
    for (const mode of ['linearizable', 'relaxed-poll'] as const) {
      const missed = misbehaving.filter((h) => checkHistory(h.calls, h.setup, mode).ok).map((h) => h.seed);
      console.log(`[history: broken queue] ${mode}: caught ${misbehaving.length - missed.length} of ${misbehaving.length}; accepted seeds: ${missed.join(', ') || 'none'}`);
      expect(missed.length, `${mode}: histories the checker accepted although the queue skipped a better job (seeds ${missed.join(', ')})`).toBeLessThanOrEqual(misbehaving.length / 20);
    }
  }, BATCH_TIMEOUT);
});
