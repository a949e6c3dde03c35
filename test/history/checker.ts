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
 * Two modes (docs/concurrency.md states both):
 *
 * - `linearizable`: every call takes effect at one instant inside its
 *   interval, exactly as the model says; completeAndPoll is one step; tokens
 *   increase in the order of the claims.
 * - `relaxed-poll`: the same, except that a poll that leased job j may have
 *   skipped a strictly better ready job b if b was not ready-and-unclaimed at
 *   some state of the poll's window (./windows.ts); completeAndPoll's complete
 *   and poll are two steps, in that order, each at its own instant; a
 *   stats() count may be any value the count took during the call;
 *   tokens need only be unique, not increasing; and a lease that a call made
 *   (a claim, an extend) and that may run out before the call returns is
 *   pinned: it expires (at its leaseUntil) only from a moment the search
 *   chooses, a `register` step inside the call's interval, after the claim.
 *   Until then the job counts as claimed (docs/concurrency.md, Expiry, "A
 *   lease made lock-free").
 */
import { formatCall, formatHistory, leaseMade, type Call, type HistorySetup } from './history.js';
import { QueueModel } from './model.js';
import { replay, replayClaim, type Part, type TokenRule } from './replay.js';
import { claim, isWindowed, judge, observe, openWindow, widen, windowKey, type Observation, type Window } from './windows.js';

export type Mode = 'linearizable' | 'relaxed-poll';

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
  /** The job whose lease this event makes and pins until its register step (relaxed mode), or undefined. */
  pins?: string;
}

/** Most replayed steps one check may take; histories of a few dozen calls need far fewer. */
const DEFAULT_BUDGET = 2_000_000;

export function checkHistory(calls: readonly Call[], setup: HistorySetup, mode: Mode, budget = DEFAULT_BUDGET): Verdict {
  return new Search(events(calls, setup, mode), setup, mode, budget).run();
}

function events(calls: readonly Call[], setup: HistorySetup, mode: Mode): Event[] {
  const list: Event[] = [];
  const relaxed = mode === 'relaxed-poll';
  const sorted = [...calls].sort((a, b) => a.inv - b.inv);
  for (const call of sorted) {
    const base = { call, inv: call.inv, resp: call.resp, after: -1 };
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
  for (const c of calls) if (c.call.op === 'advance' && c.result.ok && c.inv < call.resp) latest += c.call.ms;
  return made.leaseUntil <= latest;
}

class Search {
  readonly #events: Event[];
  readonly #setup: HistorySetup;
  readonly #relaxed: boolean;
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
    this.#relaxed = mode === 'relaxed-poll';
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
    if (done.every(Boolean)) return this.#closeAll(windows) === undefined;
    const key = `${done.map((d) => (d ? 1 : 0)).join('')};${model.key()};${windows.map((w) => (w === null ? '' : windowKey(w))).join(';')}`;
    if (this.#visited.has(key)) return false;
    this.#visited.add(key);
    // A call may come next only if no call still outside the order responded before it was invoked.
    let firstResponse = Number.POSITIVE_INFINITY;
    for (let i = 0; i < events.length; i++) if (!done[i]) firstResponse = Math.min(firstResponse, events[i]!.resp);
    const stuck: { step: Step; reason: string }[] = [];
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (done[i] || e.inv > firstResponse || (e.after >= 0 && !done[e.after])) continue;
      if (--this.#budget < 0) return false;
      const next = model.clone();
      const refused = this.#relaxed && e.windowed ? this.#windowedStep(next, e) : replay(next, e.call, e.part, this.#tokens);
      if (refused !== undefined) {
        stuck.push({ step: e, reason: refused });
        continue;
      }
      if (e.pins !== undefined) next.pin(e.pins);
      const nextSeen = this.#relaxed ? observe(next) : seen;
      const nextWindows = this.#relaxed ? this.#advanceWindows(i, seen, nextSeen, done, windows) : windows;
      if (typeof nextWindows === 'string') {
        stuck.push({ step: e, reason: nextWindows });
        continue;
      }
      done[i] = true;
      this.#path.push(e);
      if (this.#extend(next, nextSeen, done, nextWindows)) return true;
      this.#path.pop();
      done[i] = false;
      if (this.#budget < 0) return false;
    }
    if (this.#path.length >= this.#longest.length && stuck.length > 0) {
      this.#longest = [...this.#path];
      this.#stuck = stuck;
    }
    return false;
  }

  /** A windowed call in the relaxed mode: a poll's claim of its job (its window judges the rest), or a stats() (judged by its window alone). */
  #windowedStep(model: QueueModel, e: Event): string | undefined {
    return e.call.call.op === 'stats' ? undefined : replayClaim(model, e.call, this.#tokens);
  }

  /**
   * The windows once event `placed` is appended to the order (`before` and
   * `after` are the states around it): calls outside the order restart or
   * widen theirs, calls in it widen theirs or, if `placed` began after they
   * ended, close and judge them. A string is why a closing window refuses.
   */
  #advanceWindows(placed: number, before: Observation, after: Observation, done: boolean[], windows: (Window | null)[]): (Window | null)[] | string {
    const p = this.#events[placed]!;
    const next = [...windows];
    for (let i = 0; i < next.length; i++) {
      const w = next[i];
      if (w === null || w === undefined) continue;
      const e = this.#events[i]!;
      if (i === placed) {
        next[i] = widen(claim(w, e.call, before), after);
      } else if (!done[i]) {
        next[i] = p.resp < e.inv ? openWindow(e.call, after) : widen(w, after);
      } else if (p.inv < e.resp) {
        next[i] = widen(w, after);
      } else {
        const refused = judge(w, e.call);
        if (refused !== undefined) return `${formatCall(e.call)}: ${refused}`;
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

/**
 * A smaller history that still fails, to look at instead of the whole: its
 * shortest failing prefix cut where no call was in flight (so that the prefix
 * is a history of its own), then without each call that changed nothing (a
 * view, a stats(), a call that threw, a poll that found nothing) whose removal
 * keeps it failing. Dropping such a call only removes constraints, so what
 * remains fails for a reason the whole history has.
 */
export function minimalFailingHistory(calls: readonly Call[], setup: HistorySetup, mode: Mode): Call[] {
  const fails = (candidate: Call[]) => !checkHistory(candidate, setup, mode).ok;
  const sorted = [...calls].sort((a, b) => a.inv - b.inv);
  let minimal = sorted;
  let latestResponse = Number.NEGATIVE_INFINITY;
  for (let n = 1; n < sorted.length; n++) {
    latestResponse = Math.max(latestResponse, sorted[n - 1]!.resp);
    if (latestResponse < sorted[n]!.inv && fails(sorted.slice(0, n))) {
      minimal = sorted.slice(0, n);
      break;
    }
  }
  for (const call of [...minimal]) {
    if (!changesNothing(call)) continue;
    const without = minimal.filter((c) => c !== call);
    if (fails(without)) minimal = without;
  }
  return minimal;
}

function changesNothing(c: Call): boolean {
  const op = c.call.op;
  return !c.result.ok || op === 'view' || op === 'stats' || (op === 'poll' && c.result.value === undefined);
}

/** An assertion message: the seed, the minimal failing history, and where the search got stuck on it. */
export function explainFailure(what: string, calls: readonly Call[], setup: HistorySetup, mode: Mode): string {
  const minimal = minimalFailingHistory(calls, setup, mode);
  const verdict = checkHistory(minimal, setup, mode);
  const lines = [`${what}: not ${mode} (setup ${JSON.stringify(setup)})`, `minimal failing history (${minimal.length} of ${calls.length} calls):`, formatHistory(minimal)];
  if (!verdict.ok) {
    if (verdict.exhausted) lines.push('(the search ran out of budget)');
    lines.push(`longest order the search built (${verdict.longest.length} steps):`);
    lines.push(...verdict.longest.map((s) => `  ${stepName(s)}`));
    lines.push('where it got stuck:');
    lines.push(...verdict.stuck.map((s) => `  ${stepName(s.step)}: ${s.reason}`));
  }
  return lines.join('\n');
}

function stepName(step: Step): string {
  const part = { whole: '', complete: ' [its complete]', poll: ' [its poll]', register: ' [its lease registered for expiry]' }[step.part];
  return `${formatCall(step.call)}${part}`;
}
