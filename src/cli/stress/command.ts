/**
 * `leasehold stress`: N threads × M calls on a queue of a chosen backend,
 * history after history, each recorded (./recorder.ts) and checked: no job
 * leased twice, every submitted job accounted for, and the history checker's
 * verdict in the backend's mode. Prints what it did, a verdict and the
 * command that replays the same plans; returns the exit code (0 pass, 1 fail).
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { checkHistory, mayRunOutInFlight, type Mode } from '../../testing/checker.js';
import { doubleLeases, overlappingCalls } from '../../testing/properties.js';
import { findViolation } from '../../testing/report.js';
import { Progress } from '../progress.js';
import { ProcessStressRecorder } from './process-recorder.js';
import { StressRecorder, type Backend, type RecordedHistory } from './recorder.js';

export interface StressOptions {
  backend: Backend;
  redisUrl: string | undefined;
  threads: number;
  calls: number;
  histories: number;
  /** Kill a thread each time this many more calls were made (0: never). */
  killEvery: number;
  seed: number;
  /** undefined: the mode the backend promises. */
  mode: Mode | undefined;
  /** A module whose `wrapQueue` the threads call the queue through. */
  wrapper: string | undefined;
  /** Redis only: each racer is a process of its own (`threads` of them), not a thread. */
  processes: boolean;
  /** The plans also release, remove and edit (see the plan's `edits`). */
  edits?: boolean;
  /** The submits name groups (see the plan's `groups`); not with `processes`. */
  groups?: boolean;
}

export const kStressDefaults = { backend: 'memory', threads: 4, calls: 10, histories: 200, killEvery: 0 } as const;

/**
 * What each backend promises (docs/concurrency.md): the shared-memory core's
 * lock-free polls are relaxed-poll. Redis runs each call as one Lua script,
 * but with the time its client read before sending it: while the threads
 * move the clock, a call can run after one that read a later time, so a
 * poll may act at an older time than a call placed before it (relaxed-poll's
 * rule 2). Processes move no clock, and their histories are linearizable.
 * Grouped submits take turns within a priority, which the checker's model
 * does not know: their histories are checked in relaxed-order.
 */
export function promisedMode(backend: Backend, processes: boolean, groups = false): Mode {
  if (groups) return 'relaxed-order';
  return backend === 'redis' && processes ? 'linearizable' : 'relaxed-poll';
}

interface Tally {
  histories: number;
  calls: number;
  overlapping: number;
  concurrent: number;
  killed: number;
  pending: number;
  /** Histories in which the queue took a live thread for dead (see RecordedHistory). */
  tookLiveForDead: number;
  /** Clock moves during the histories, and leases the clock may have run out while the call that made them ran. */
  moves: number;
  expiredInFlight: number;
  /** Group caps set, changed or removed (`--groups`). */
  capCalls: number;
  submitted: number;
  checked: number;
  /** Per property, the first failure (with its history's seed), and how many histories failed it. */
  failures: Map<string, { count: number; first: string }>;
}

export async function runStress(options: StressOptions): Promise<number> {
  const mode = options.mode ?? promisedMode(options.backend, options.processes, options.groups === true);
  const { threads, calls, histories, killEvery, seed } = options;
  console.log(
    `leasehold stress: ${options.backend} queue, ${threads} ${racers(options, 2)} x up to ${calls} calls, ${histories} histories, ` +
      `mode ${mode}, ${killEvery > 0 ? `a ${racers(options)} killed every ${killEvery} calls` : 'no kills'}, seed ${seed}`,
  );
  const recorder = options.processes
    ? new ProcessStressRecorder({ processes: threads, maxCalls: calls, redisUrl: options.redisUrl!, killEvery, edits: options.edits === true })
    : new StressRecorder({
        threads, maxCalls: calls, backend: options.backend, redisUrl: options.redisUrl, killEvery, edits: options.edits === true, groups: options.groups === true,
        wrapper: options.wrapper === undefined ? undefined : pathToFileURL(resolve(options.wrapper)).href,
      });
  const tally: Tally = { histories: 0, calls: 0, overlapping: 0, concurrent: 0, killed: 0, pending: 0, tookLiveForDead: 0, moves: 0, expiredInFlight: 0, capCalls: 0, submitted: 0, checked: 0, failures: new Map() };
  const progress = new Progress('stress', histories, () => ({ done: tally.histories, fields: { calls: tally.calls, failed: failedHistories(tally) } }), process.stderr).every(500);
  try {
    for (let i = 0; i < histories; i++) {
      const history = await recorder.record((seed + i) >>> 0);
      judge(history, mode, tally);
    }
  } finally {
    progress.stop();
    await recorder.close();
  }
  return report(tally, options, mode);
}

function judge(history: RecordedHistory, mode: Mode, tally: Tally): void {
  const fail = (property: string, detail: () => string) => {
    const seen = tally.failures.get(property);
    if (seen !== undefined) seen.count++;
    else tally.failures.set(property, { count: 1, first: `history seed ${history.seed}${history.tookLiveForDead ? ' (a live thread was taken for dead in it)' : ''}:\n${detail()}` });
  };
  const overlapping = overlappingCalls(history.calls);
  tally.histories++;
  tally.calls += history.calls.length;
  tally.overlapping += overlapping;
  if (overlapping > 0) tally.concurrent++;
  tally.killed += history.killed;
  if (history.tookLiveForDead) tally.tookLiveForDead++;
  tally.pending += history.calls.filter((c) => c.pending === true).length;
  tally.submitted += history.submitted.length;
  tally.moves += history.calls.filter((c) => c.call.op === 'advance').length;
  tally.expiredInFlight += history.calls.filter((c) => mayRunOutInFlight(c, history.calls, history.setup.start)).length;
  tally.capCalls += history.calls.filter((c) => c.call.op === 'setGroupConcurrency').length;
  const doubles = doubleLeases(history.calls);
  if (doubles.length > 0) fail('no job leased twice at once', () => doubles.join('\n'));
  if (history.unaccounted.length > 0) fail('every submitted job accounted for', () => history.unaccounted.join('\n'));
  const verdict = checkHistory(history.calls, history.setup, mode);
  if (verdict.ok) tally.checked++;
  else fail(`history checker: ${mode}`, () => findViolation(history.calls, history.setup, mode)?.text ?? '(the search ran out of budget)');
}

/** What races: threads, or (Redis) processes; `count` 2 for the plural. */
function racers(options: StressOptions, count = 1): string {
  const one = options.processes ? 'process' : 'thread';
  return count === 1 ? one : `${one}${options.processes ? 'es' : 's'}`;
}

function failedHistories(tally: Tally): number {
  return tally.histories - tally.checked;
}

const PROPERTIES = ['no job leased twice at once', 'every submitted job accounted for'];

function report(tally: Tally, options: StressOptions, mode: Mode): number {
  const percent = (n: number, of: number) => (of === 0 ? '0%' : `${((100 * n) / of).toFixed(1)}%`);
  console.log(`calls made: ${tally.calls} in ${tally.histories} histories; ${tally.submitted} jobs submitted`);
  console.log(
    `calls that really overlapped a call of another ${racers(options)}: ${tally.overlapping} (${percent(tally.overlapping, tally.calls)}); ` +
      `histories with overlaps: ${tally.concurrent} (${percent(tally.concurrent, tally.histories)})`,
  );
  if (!options.processes) console.log(`clock moves: ${tally.moves}; leases the clock may have run out while the call that made them ran: ${tally.expiredInFlight}`);
  if (options.groups === true) console.log(`group caps set, changed or removed: ${tally.capCalls}`);
  if (options.killEvery > 0) console.log(`${racers(options, 2)} killed: ${tally.killed}; calls they left without a response (pending): ${tally.pending}`);
  if (!options.processes && options.backend !== 'redis') console.log(`histories in which the queue took a live thread for dead (its patience grew): ${tally.tookLiveForDead}`);
  for (const property of [...PROPERTIES, `history checker: ${mode}`]) {
    const failure = tally.failures.get(property);
    const line = failure === undefined ? `ok in ${tally.histories} of ${tally.histories} histories` : `FAILED in ${failure.count} of ${tally.histories} histories`;
    console.log(`property: ${property}: ${line}`);
  }
  for (const [property, failure] of tally.failures) console.log(`\nfirst failure of "${property}", ${failure.first}`);
  const passed = tally.failures.size === 0;
  console.log(`\nverdict: ${passed ? 'PASS' : 'FAIL'}`);
  console.log(`replay (the same plans; which calls overlap is up to the machine): ${replayCommand(options)}`);
  return passed ? 0 : 1;
}

function replayCommand(o: StressOptions): string {
  const args = ['leasehold stress', `--backend ${o.backend}`];
  if (o.redisUrl !== undefined) args.push(`--redis-url ${o.redisUrl}`);
  if (o.processes) args.push('--processes');
  if (o.edits === true) args.push('--edits');
  if (o.groups === true) args.push('--groups');
  args.push(`--threads ${o.threads}`, `--calls ${o.calls}`, `--histories ${o.histories}`, `--seed ${o.seed}`);
  if (o.killEvery > 0) args.push(`--kill-every ${o.killEvery}`);
  if (o.mode !== undefined) args.push(`--mode ${o.mode}`);
  if (o.wrapper !== undefined) args.push(`--wrapper ${o.wrapper}`);
  return args.join(' ');
}
