/**
 * The history checker: is there one sequential order of all the calls of a
 * concurrent history that (1) respects real time — a call that responded
 * before another was invoked comes first — and (2) in which every call's
 * recorded result is what the model (./model.ts) returns at that point?
 * If so the history is linearizable.
 *
 * The search is Wing & Gong's, with Lowe's memoization: depth first, it
 * appends to the order any call not preceded in real time by a call still
 * outside it, replays it on a copy of the model (./replay.ts), and backs off
 * when the results differ; a (calls placed, model state, windows) triple seen
 * before is not searched again.
 *
 * Three modes (docs/concurrency.md states each):
 *
 * - `linearizable`: every call takes effect at one instant inside its
 *   interval, exactly as the model says; completeAndPoll is one step; tokens
 *   increase in the order of the claims.
 * - `relaxed-poll`: the same, except that a poll that leased job j may have
 *   skipped a strictly better ready job b if b was not ready-and-unclaimed at
 *   some state of the poll's window (./windows.ts); completeAndPoll's complete
 *   and poll are two steps, in that order, each at its own instant; a
 *   stats() count may be any value the count took during the call;
 *   tokens need only be unique, not increasing; a lease (a claim's, an
 *   extend's new end) may run from any reading of the clock since the call
 *   began, up to its step; and a lease that a call made
 *   (a claim, an extend) and that may run out before the call returns is
 *   pinned: it expires (at its leaseUntil) only from a moment the search
 *   chooses, a `register` step inside the call's interval, after the claim.
 *   Until then the job counts as claimed (docs/concurrency.md, Expiry, "A
 *   lease made lock-free").
 * - `relaxed-order`: `relaxed-poll`, except that a better job is one of a
 *   strictly higher priority, or of the same priority and group, submitted
 *   ready earlier, both untouched since (model.ts, isBetterInGroupOrder):
 *   across groups a poll may lease any ready job of the priority. For
 *   histories with grouped submits, whose order within a priority is the
 *   groups' turns, which the model does not know. A poll that returned
 *   nothing is held to the same rule as in the other modes (no job ready at
 *   its place).
 *
 * Group caps, in every mode: a `setGroupConcurrency(group, max)` takes
 * effect at one instant, as any call; `max` null removes the cap. A poll may
 * lease job j of group g only where fewer than g's cap of g's jobs are
 * RUNNING in the model (model.ts, `claimable`): after the leases that ran
 * out by then have expired (the core's locked poll catches up every due
 * expiry before it claims), with a lease pinned in flight still counted, and
 * with a cap lowered below the jobs already running leaving them running
 * (only later claims wait). A poll that leases past a cap fits nowhere.
 * The better jobs a poll must not pass over are the claimable ones: in
 * `linearizable`, the best claimable job; in the relaxed modes a poll may
 * pass over a better job b if, at some state of its window, b was not
 * claimable — not ready, or its group at its cap. A job held back for its
 * group's cap and filed back later is the same PENDING job throughout (the
 * core keeps its turn), so nothing else changes. A poll that returned
 * nothing needs no claimable job at its place. Why the model's count, and
 * not the core's, is the one to hold a poll to: the core's count is never
 * below the jobs RUNNING (I25), so a claim it admits is below the cap in the
 * model too; and it is above them only while a move out of RUNNING is
 * between its CAS and its count, with the slot BUSY (Mover#apply counts
 * before it publishes the new word), so no call has seen the job leave
 * RUNNING yet and the search may place that move after the poll.
 *
 * Payloads written in place (./in-place.ts): `reserveBytes` and
 * `releaseBytes` change no job and fit anywhere; a submit refused with
 * ERR_RESERVATION_LOST (its reservation reclaimed, I30) changed nothing.
 * The reservation's bytes are checked as any payload: by the name they spell.
 *
 * A pending call (one that never returned: its thread was killed inside it)
 * may be placed anywhere after its invocation, or nowhere; placed, it does
 * what the model does there (a poll in the relaxed mode: claims any ready
 * job; a submit: makes its job, or only makes room and takes its id, or
 * either; a completeAndPoll in
 * the relaxed mode: its complete, then maybe its poll later, as two steps),
 * whatever that returns, and the lease it makes has a token nobody holds. A submit whose thread was
 * presumed dead inside it (`presumedDead`) may, as a submit killed there,
 * take an id no job gets, and then makes its job with a later one.
 */
import { formatCall, leaseMade, type Call, type HistorySetup } from './history.js';
import { QueueModel } from './model.js';
import { replay, replayClaim, replayPending, replaySkippedId, type LeaseRule, type Part, type TokenRule } from './replay.js';
import { isBetter, isBetterInGroupOrder, type ModelJob } from './model.js';
import { claim, isWindowed, judge, observe, openWindow, widen, windowKey, type Observation, type Window } from './windows.js';

export type Mode = 'linearizable' | 'relaxed-poll' | 'relaxed-order';

export interface Step {
  call: Call;
  part: Part;
}

export type Verdict =
  | { ok: true; order: Step[] }
  | {
      ok: false;
      /** The longest order the search could build, and why each call that could come next did not fit there. */
      longest: Step[];
      stuck: { step: Step; reason: string }[];
      /** The search gave up after its budget of steps: no verdict on the history itself. */
      exhausted: boolean;
    };

interface Event extends Step {
  inv: number;
  resp: number;
  /** The event that must come first (completeAndPoll's complete before its poll, a lease's claim before its register), or -1. */
  after: number;
  windowed: boolean;
  /** A pending call: the order may leave it out. */
  optional: boolean;
  /** The event it may only come before (a number skipped before its submit's own), or -1. */
  before: number;
  /** The job whose lease this event makes and pins until its register step (relaxed mode), or undefined. */
  pins?: string;
  /** The clock when the call began, at the least: the advances that returned before it, from the start. */
  clockFloor: number;
}

/** Most replayed steps one check may take; histories of a few dozen calls need far fewer. */
const DEFAULT_BUDGET = 2_000_000;

/**
 * Whether `calls` has an order the model allows in `mode`; `budget` bounds
 * the replayed steps (past it the verdict is not ok, with `exhausted`).
 */
export function checkHistory(calls: readonly Call[], setup: HistorySetup, mode: Mode, budget = DEFAULT_BUDGET): Verdict {
  return new Search(events(calls, setup, mode), setup, mode, budget).run();
}

/** A call's response stamp, Infinity for a pending call (whatever its record holds: JSON has no Infinity). */
export function responseOf(call: Call): number {
  return call.pending === true ? Number.POSITIVE_INFINITY : call.resp;
}

function events(calls: readonly Call[], setup: HistorySetup, mode: Mode): Event[] {
  const list: Event[] = [];
  const relaxed = mode !== 'linearizable';
  const sorted = [...calls].sort((a, b) => a.inv - b.inv);
  for (const call of sorted) {
    const base = { call, inv: call.inv, resp: responseOf(call), after: -1, before: -1, optional: false, clockFloor: clockFloor(call, sorted, setup.start) };
    if (call.pending === true) {
      if (relaxed && call.call.op === 'completeAndPoll') {
        // Its two steps may each have taken effect, in order: killed between them, it completed and claimed nothing.
        list.push({ ...base, part: 'complete', windowed: false, optional: true });
        list.push({ ...base, part: 'poll', after: list.length - 1, windowed: false, optional: true });
      } else {
        list.push({ ...base, part: 'whole', windowed: false, optional: true });
      }
      continue;
    }
    // A submit whose thread was taken for dead inside it may have taken a number first, and then its job's.
    if (call.presumedDead === true && call.call.op === 'submit') {
      // Left out of the order once its submit is in: it holds back no other call.
      list.push({ ...base, resp: Number.POSITIVE_INFINITY, before: list.length + 1, part: 'skipId', windowed: false, optional: true });
    }
    if (relaxed && call.call.op === 'completeAndPoll' && call.result.ok) {
      list.push({ ...base, part: 'complete', windowed: false });
      list.push({ ...base, part: 'poll', after: list.length - 1, windowed: isWindowed(call) });
    } else {
      list.push({ ...base, part: 'whole', windowed: relaxed && isWindowed(call) });
    }
    if (relaxed && mayRunOutInFlight(call, sorted, setup.start)) {
      const maker = list.length - 1;
      list[maker]!.pins = leaseMade(call)!.jobId;
      list.push({ ...base, part: 'register', after: maker, windowed: false });
    }
  }
  return list;
}

/**
 * Whether the lease `call` made may run out before the call returns: the
 * clock, moved by every `advance` invoked before that, can reach its end.
 * (Only those leases are pinned: the others would expire after the call anyway.)
 */
export function mayRunOutInFlight(call: Call, calls: readonly Call[], start: number): boolean {
  const made = leaseMade(call);
  if (made === undefined) return false;
  let latest = start;
  // A pending advance may have moved the clock too.
  for (const c of calls) if (c.call.op === 'advance' && (c.result.ok || c.pending === true) && c.inv < call.resp) latest += c.call.ms;
  return made.leaseUntil <= latest;
}

/** The clock when `call` began, at the least: `start` moved by every advance that returned before it. */
function clockFloor(call: Call, calls: readonly Call[], start: number): number {
  let floor = start;
  for (const c of calls) if (c.call.op === 'advance' && c.result.ok && c.pending !== true && c.resp < call.inv) floor += c.call.ms;
  return floor;
}

class Search {
  readonly #events: Event[];
  readonly #setup: HistorySetup;
  readonly #relaxed: boolean;
  /** Which ready jobs a poll's window holds against the job it leased. */
  readonly #better: (a: ModelJob, b: ModelJob) => boolean;
  readonly #tokens: TokenRule;
  /** (calls placed, model state, windows) triples already searched from. */
  readonly #visited = new Set<string>();
  readonly #path: Step[] = [];
  #budget: number;
  #longest: Step[] = [];
  #stuck: { step: Step; reason: string }[] = [];

  constructor(events: Event[], setup: HistorySetup, mode: Mode, budget: number) {
    this.#events = events;
    this.#setup = setup;
    this.#relaxed = mode !== 'linearizable';
    this.#better = mode === 'relaxed-order' ? isBetterInGroupOrder : isBetter;
    this.#tokens = this.#relaxed ? 'unique' : 'increasing';
    this.#budget = budget;
  }

  run(): Verdict {
    const { start, policy, capacity } = this.#setup;
    const model = new QueueModel(start, policy, capacity, undefined);
    const seen = observe(model);
    const windows = this.#events.map((e) => (e.windowed ? openWindow(e.call, seen) : null));
    const found = this.#extend(model, seen, new Array<boolean>(this.#events.length).fill(false), windows);
    if (found) return { ok: true, order: [...this.#path] };
    return { ok: false, longest: this.#longest, stuck: this.#stuck, exhausted: this.#budget <= 0 };
  }

  /** Tries every call that may come next; true once the order holds every call (`#path` is then that order). */
  #extend(model: QueueModel, seen: Observation, done: boolean[], windows: (Window | null)[]): boolean {
    const events = this.#events;
    if (done.every((d, i) => d || events[i]!.optional)) {
      if (this.#closeAll(windows) === undefined) return true;
      if (done.every(Boolean)) return false;
      // Some pending call is still out of the order: placing it may yet close the windows.
    }
    const key = `${done.map((d) => (d ? 1 : 0)).join('')};${model.key()};${windows.map((w) => (w === null ? '' : windowKey(w))).join(';')}`;
    if (this.#visited.has(key)) return false;
    this.#visited.add(key);
    // A call may come next only if no call still outside the order responded before it was invoked.
    let firstResponse = Number.POSITIVE_INFINITY;
    for (let i = 0; i < events.length; i++) if (!done[i]) firstResponse = Math.min(firstResponse, events[i]!.resp);
    const stuck: { step: Step; reason: string }[] = [];
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (done[i] || e.inv > firstResponse || (e.after >= 0 && !done[e.after]) || (e.before >= 0 && done[e.before])) continue;
      for (const next of this.#successors(model, e)) {
        if (--this.#budget < 0) return false;
        if (typeof next === 'string') {
          stuck.push({ step: e, reason: next });
          continue;
        }
        if (e.pins !== undefined) next.pin(e.pins);
        const nextSeen = this.#relaxed ? observe(next) : seen;
        const nextWindows = this.#relaxed ? this.#advanceWindows(i, seen, nextSeen, done, windows) : windows;
        if (!Array.isArray(nextWindows)) {
          // A window closed on a call it does not allow: that call is the one that fits nowhere here.
          stuck.push(nextWindows);
          continue;
        }
        done[i] = true;
        this.#path.push(e);
        if (this.#extend(next, nextSeen, done, nextWindows)) return true;
        this.#path.pop();
        done[i] = false;
        if (this.#budget < 0) return false;
      }
    }
    if (this.#path.length >= this.#longest.length && stuck.length > 0) {
      this.#longest = [...this.#path];
      this.#stuck = stuck;
    }
    return false;
  }

  /** The models `e` may leave when placed on `model` (more than one for a pending poll), or why it cannot be placed there. */
  #successors(model: QueueModel, e: Event): (QueueModel | string)[] {
    if (e.part === 'skipId') return [replaySkippedId(model)];
    if (e.optional) return replayPending(model, e.call, e.part, this.#relaxed);
    const next = model.clone();
    const refused = this.#relaxed && e.windowed ? this.#windowedStep(next, e) : replay(next, e.call, e.part, this.#leaseRule(e));
    return [refused ?? next];
  }

  /** A windowed call in the relaxed mode: a poll's claim of its job (its window judges the rest), or a stats() (judged by its window alone). */
  #windowedStep(model: QueueModel, e: Event): string | undefined {
    return e.call.call.op === 'stats' ? undefined : replayClaim(model, e.call, this.#leaseRule(e));
  }

  /** What a lease `e` made must satisfy: in the relaxed mode it may run from any reading of the clock since the call began. */
  #leaseRule(e: Event): LeaseRule {
    return this.#relaxed ? { tokens: this.#tokens, earliestReading: e.clockFloor } : { tokens: this.#tokens };
  }

  /**
   * The windows once event `placed` is appended to the order (`before` and
   * `after` are the states around it): calls outside the order restart or
   * widen theirs, calls in it widen theirs or, if `placed` began after they
   * ended, close and judge them; or the call whose closing window refuses, and why.
   */
  #advanceWindows(placed: number, before: Observation, after: Observation, done: boolean[], windows: (Window | null)[]): (Window | null)[] | { step: Step; reason: string } {
    const p = this.#events[placed]!;
    const next = [...windows];
    for (let i = 0; i < next.length; i++) {
      const w = next[i];
      if (w === null || w === undefined) continue;
      const e = this.#events[i]!;
      if (i === placed) {
        next[i] = widen(claim(w, e.call, before, this.#better), after);
      } else if (!done[i]) {
        next[i] = p.resp < e.inv ? openWindow(e.call, after) : widen(w, after);
      } else if (p.inv < e.resp) {
        next[i] = widen(w, after);
      } else {
        const refused = judge(w, e.call);
        if (refused !== undefined) return { step: e, reason: `${refused} (its window closed when ${formatCall(p.call)} began after it)` };
        next[i] = null;
      }
    }
    return next;
  }

  #closeAll(windows: (Window | null)[]): string | undefined {
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i];
      const refused = w === null || w === undefined ? undefined : judge(w, this.#events[i]!.call);
      if (refused !== undefined) {
        if (this.#path.length >= this.#longest.length) {
          this.#longest = [...this.#path];
          this.#stuck = [{ step: this.#events[i]!, reason: refused }];
        }
        return refused;
      }
    }
    return undefined;
  }
}
