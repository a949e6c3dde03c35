/**
 * The relaxed mode's windows (docs/concurrency.md, "relaxed-poll"). A call's
 * window is the stretch of states of a candidate order that could hold while
 * the call ran:
 *
 *   from the state right after the last call, before it in the order, that
 *   responded before it was invoked (the initial state if none),
 *   to the state right before the first call, after it in the order, that
 *   was invoked after it responded (the final state if none).
 *
 * A poll that returned job j was checked at its claim (j claimable there:
 * ready, its group below its cap); its window must also show every strictly
 * better job that was claimable at the claim not claimable (claimed, not yet
 * submitted or due, cancelled, its group at its cap) in at least one of its
 * states. A `stats()` is never checked at one point: each count must lie
 * between the least and the greatest value it took over the call's window.
 *
 * A window is plain data, copied along the search and named by `windowKey`.
 */
import type { Call, LeaseResult } from './history.js';
import { type ModelJob, type ModelStats, type QueueModel } from './model.js';

/** What a window looks at in one state: the claimable jobs by id (ready, their group below its cap), and the counts. */
export interface Observation {
  claimable: Map<string, ModelJob>;
  counts: number[];
}

export type Window =
  /** A poll not yet claimed: the jobs claimable in every state of its window so far. */
  | { kind: 'poll-open'; claimableThroughout: string[] }
  /** A poll after its claim: the better jobs that have been claimable in every state of its window so far. */
  | { kind: 'poll-claimed'; betterThroughout: string[] }
  /** A stats() call: each count's least and greatest value over its window so far. */
  | { kind: 'stats'; low: number[]; high: number[] };

const COUNT_NAMES: readonly Exclude<keyof ModelStats, 'paused'>[] = ['pending', 'ready', 'delayed', 'running', 'succeeded', 'dead', 'cancelled'];

/** Whether the relaxed mode checks `call` against a window: a poll that leased a job, or a stats() that returned. */
export function isWindowed(call: Call): boolean {
  if (!call.result.ok) return false;
  if (call.call.op === 'stats') return true;
  return (call.call.op === 'poll' || call.call.op === 'completeAndPoll') && call.result.value !== undefined;
}

/** Looks at `model` as it stands (leases expired first: that changes nothing later calls could see). */
export function observe(model: QueueModel): Observation {
  model.expire();
  const stats = model.stats();
  return { claimable: new Map(model.claimable().map((j) => [j.id, j])), counts: COUNT_NAMES.map((name) => stats[name]) };
}

/** A window that starts at the state `seen` (the initial one, or one after a call that responded before `call` began). */
export function openWindow(call: Call, seen: Observation): Window {
  if (call.call.op === 'stats') return { kind: 'stats', low: [...seen.counts], high: [...seen.counts] };
  return { kind: 'poll-open', claimableThroughout: [...seen.claimable.keys()] };
}

/** The window goes on through one more state. */
export function widen(window: Window, seen: Observation): Window {
  switch (window.kind) {
    case 'poll-open':
      return { kind: 'poll-open', claimableThroughout: window.claimableThroughout.filter((id) => seen.claimable.has(id)) };
    case 'poll-claimed':
      return { kind: 'poll-claimed', betterThroughout: window.betterThroughout.filter((id) => seen.claimable.has(id)) };
    case 'stats':
      return {
        kind: 'stats',
        low: window.low.map((v, i) => Math.min(v, seen.counts[i]!)),
        high: window.high.map((v, i) => Math.max(v, seen.counts[i]!)),
      };
  }
}

/**
 * The poll `call` claims its job at the state `atClaim` (before the claim):
 * what stays to be seen is which better jobs (by `better`: the mode's order,
 * model.ts), claimable all along so far, stop being claimable before the window ends.
 */
export function claim(window: Window, call: Call, atClaim: Observation, better: (a: ModelJob, b: ModelJob) => boolean): Window {
  if (window.kind !== 'poll-open') return window;
  const jobId = (call.result as { value: LeaseResult }).value.jobId;
  const leased = atClaim.claimable.get(jobId);
  // replayClaim refused the step already if the job was not claimable here.
  if (leased === undefined) throw new Error(`claim of ${jobId}, which is not claimable`);
  const betterThroughout = window.claimableThroughout.filter((id) => {
    const job = atClaim.claimable.get(id);
    return job !== undefined && better(job, leased);
  });
  return { kind: 'poll-claimed', betterThroughout };
}

/** Why the call's result is not allowed by its (now closed) window, or undefined if it is. */
export function judge(window: Window, call: Call): string | undefined {
  switch (window.kind) {
    case 'poll-open':
      return undefined;
    case 'poll-claimed':
      return window.betterThroughout.length === 0
        ? undefined
        : `better ready job${window.betterThroughout.length > 1 ? 's' : ''} ${window.betterThroughout.join(', ')} stayed ready and unclaimed for the whole call`;
    case 'stats': {
      const got = (call.result as { value: ModelStats }).value;
      const off = COUNT_NAMES.filter((name, i) => !(got[name] >= window.low[i]! && got[name] <= window.high[i]!));
      return off.length === 0
        ? undefined
        : `stats ${off.map((name) => `${name} = ${got[name]} outside [${window.low[COUNT_NAMES.indexOf(name)]}, ${window.high[COUNT_NAMES.indexOf(name)]}]`).join(', ')} over the call`;
    }
  }
}

export function windowKey(window: Window): string {
  switch (window.kind) {
    case 'poll-open':
      return `o${window.claimableThroughout.join(',')}`;
    case 'poll-claimed':
      return `c${window.betterThroughout.join(',')}`;
    case 'stats':
      return `s${window.low.join(',')}/${window.high.join(',')}`;
  }
}
