/**
 * Histories recorded apart — one per process, each stamped from one shared
 * clock (`redisStamps`) — joined into one history for the checker.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Call } from './history.js';

/**
 * One history of all the calls of `parts`, in invocation order; each part's
 * threads get numbers of their own (part 0's first, then part 1's, ...).
 * Throws InvalidArgumentError if two calls carry one stamp: the parts were not
 * stamped from one shared clock, and their order in real time is unknown.
 */
export function mergeHistories(parts: readonly (readonly Call[])[]): Call[] {
  const merged: Call[] = [];
  const stamps = new Set<number>();
  let nextThread = 0;
  for (const part of parts) {
    const threads = new Map<number, number>();
    for (const call of part) {
      for (const stamp of call.pending === true ? [call.inv] : [call.inv, call.resp]) {
        if (stamps.has(stamp)) {
          throw new InvalidArgumentError(`Expected histories stamped from one shared clock (redisStamps), but stamp ${stamp} occurs twice`);
        }
        stamps.add(stamp);
      }
      if (!threads.has(call.thread)) threads.set(call.thread, nextThread++);
      merged.push({ ...call, thread: threads.get(call.thread)! });
    }
  }
  return merged.sort((a, b) => a.inv - b.inv);
}
