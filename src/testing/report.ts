/**
 * What a failing history is shown as: a smaller history that still fails,
 * the longest order the checker could build, and the first violation — the
 * call that fits nowhere in it, why, and the calls around it.
 */
import { checkHistory, responseOf, type Mode, type Step, type Verdict } from './checker.js';
import { formatCall, formatHistory, type Call, type HistorySetup } from './history.js';

/** The first call the checker could not place, and the evidence. */
export interface Violation {
  /** The call that fits nowhere: of those the search got stuck on, the one invoked first. */
  call: Call;
  /** Why it fits nowhere there ("the model returns ...", "token 7 was issued before ..."). */
  reason: string;
  /** The calls around it in the whole history: those that overlap it, and the three invoked just before and after. */
  around: Call[];
  /** The smallest failing history found (a subset of the calls). */
  minimal: Call[];
  /** All of the above, as lines to print. */
  text: string;
}

/** Checks `calls`; undefined if some order explains them, else the first violation. */
export function findViolation(calls: readonly Call[], setup: HistorySetup, mode: Mode): Violation | undefined {
  if (checkHistory(calls, setup, mode).ok) return undefined;
  const minimal = minimalFailingHistory(calls, setup, mode);
  const verdict = checkHistory(minimal, setup, mode);
  const sorted = [...calls].sort((a, b) => a.inv - b.inv);
  const stuck = verdict.ok ? [] : [...verdict.stuck].sort((a, b) => a.step.call.inv - b.step.call.inv);
  const first = stuck[0] ?? { step: { call: minimal[minimal.length - 1] ?? sorted[0]!, part: 'whole' as const }, reason: 'the search ran out of budget' };
  const at = sorted.indexOf(first.step.call);
  const around = sorted.filter((c, i) => Math.abs(i - at) <= 3 || (c.inv < responseOf(first.step.call) && first.step.call.inv < responseOf(c)));
  const text = [
    `first violation: ${stepName(first.step)}`,
    `  why: ${first.reason}`,
    'the history around it:',
    ...around.map((c) => `  ${c === first.step.call ? '>' : ' '} ${formatCall(c)}`),
    explanation('the history', calls, setup, mode, minimal, verdict),
  ].join('\n');
  return { call: first.step.call, reason: first.reason, around, minimal, text };
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
    latestResponse = Math.max(latestResponse, responseOf(sorted[n - 1]!));
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
  // A pending call may have changed anything; without it the history would be stricter.
  if (c.pending === true) return false;
  const op = c.call.op;
  return !c.result.ok || op === 'view' || op === 'stats' || (op === 'poll' && c.result.value === undefined);
}

/** An assertion message: the seed, the minimal failing history, and where the search got stuck on it. */
export function explainFailure(what: string, calls: readonly Call[], setup: HistorySetup, mode: Mode): string {
  const minimal = minimalFailingHistory(calls, setup, mode);
  return explanation(what, calls, setup, mode, minimal, checkHistory(minimal, setup, mode));
}

function explanation(what: string, calls: readonly Call[], setup: HistorySetup, mode: Mode, minimal: Call[], verdict: Verdict): string {
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
  const part = { whole: '', complete: ' [its complete]', poll: ' [its poll]', register: ' [its lease registered for expiry]', skipId: ' [a job number it took and left unused]' }[step.part];
  return `${formatCall(step.call)}${part}`;
}
