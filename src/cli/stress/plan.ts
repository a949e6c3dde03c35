/**
 * The seeded random calls one thread of a stress history makes, chosen from
 * what this thread has seen so far (its own leases, old tokens, the highest
 * job number it met), so that most calls name real jobs and current tokens
 * and some name stale ones. The same seed makes the same plan: which call
 * comes next depends only on the seed and on what earlier calls returned.
 * Every call goes through the thread's CallRecorder.
 */
import type { CallRecorder } from '../../testing/recorder.js';
import { prng } from '../random.js';

/** The queue methods a plan calls, sync (JobQueue) or async (RedisJobQueue). */
export interface PlanQueue {
  submit(type: string, payload?: string | null, priority?: number, runAtMillis?: number): unknown;
  submit(type: string, payload: string, options: { priority?: number; runAt?: number; group?: string }): unknown;
  poll(workerId: string, leaseMillis: number): unknown;
  complete(jobId: string, token: number): unknown;
  fail(jobId: string, token: number, error?: string | null): unknown;
  extend(jobId: string, token: number, leaseMillis: number): unknown;
  completeAndPoll(jobId: string, token: number, workerId: string, leaseMillis: number): unknown;
  cancel(jobId: string): unknown;
  retryDead(jobId: string): unknown;
  view(jobId: string): unknown;
  stats(): unknown;
  release(jobId: string, token: number, options?: { delayMillis: number }): unknown;
  remove(jobId: string): unknown;
  changePriority(jobId: string, priority: number): unknown;
  changeDelay(jobId: string, delayMillis: number): unknown;
  promote(jobId: string): unknown;
  updatePayload(jobId: string, payload: string): unknown;
  setGroupConcurrency(group: string, max: number | null): unknown;
}

export const JOB_TYPES = ['email', 'resize', 'report'] as const;
/** The groups of a plan with `groups`: few, so that each has several jobs ready and they take turns. */
export const GROUPS = ['north', 'south', 'east'] as const;
/** What `fail` is called with, besides no error at all. */
const FAIL_ERRORS = ['boom', 'timeout'] as const;

export type CallName =
  | 'submit' | 'poll' | 'complete' | 'fail' | 'extend' | 'completeAndPoll' | 'cancel' | 'retryDead' | 'view' | 'stats' | 'advance'
  | EditCallName | 'setGroupConcurrency' | 'reserveBytes' | 'releaseBytes';

/** The calls a plan makes only when asked (`edits`): release, remove and the edits of a pending job. */
export type EditCallName = 'release' | 'remove' | 'changePriority' | 'changeDelay' | 'promote' | 'updatePayload';
const EDIT_CALLS: readonly CallName[] = ['release', 'remove', 'changePriority', 'changeDelay', 'promote', 'updatePayload'];

/** Relative weights of the calls; those on a lease count only while the thread holds one. */
const WEIGHTS: readonly [CallName, number][] = [
  ['submit', 3],
  ['poll', 3],
  ['complete', 2.5],
  ['fail', 1],
  ['extend', 1],
  ['completeAndPoll', 1.5],
  ['cancel', 1],
  ['retryDead', 1],
  ['view', 1],
  ['stats', 0.7],
  ['advance', 1.5],
  // Last, and left out unless asked for: a plan without them draws exactly as before they existed, so a seed
  // recorded then (test/scheduled/regressions.test.ts) still makes the same calls.
  ['release', 1],
  ['remove', 0.7],
  ['changePriority', 0.7],
  ['changeDelay', 0.7],
  ['promote', 0.7],
  ['updatePayload', 0.5],
  // With `groups` only, after the edits for the same reason.
  ['setGroupConcurrency', 0.8],
  // With `reservations` only, after the caps for the same reason.
  ['reserveBytes', 3],
  ['releaseBytes', 0.4],
];
const ON_A_LEASE: readonly CallName[] = ['complete', 'fail', 'extend', 'completeAndPoll', 'release'];

export interface SubmitArgs {
  type: string;
  payload: string;
  priority: number | undefined;
  runAt: number | undefined;
  group?: string;
}

/**
 * A submit's arguments: a type, a small numeric payload, sometimes a
 * priority, sometimes a runAt near now; with `groups`, mostly one of GROUPS
 * (drawn last: without it a seed draws as before groups existed).
 */
export function submitArgs(random: () => number, now: number, groups = false): SubmitArgs {
  const priority = random() < 0.4 ? undefined : Math.floor(random() * 3);
  const runAt = random() < 0.6 ? undefined : now + Math.floor(random() * 41) - 10;
  const args: SubmitArgs = { type: JOB_TYPES[Math.floor(random() * JOB_TYPES.length)]!, payload: String(Math.floor(random() * 1000)), priority, runAt };
  if (groups) {
    // One in four ungrouped: group 0 takes turns beside the named ones.
    const g = Math.floor(random() * (GROUPS.length + 1));
    if (g < GROUPS.length) args.group = GROUPS[g]!;
  }
  return args;
}

export interface CapArgs {
  group: string;
  /** null: the cap removed. */
  max: number | null;
}

/** A group cap to set: one of GROUPS, capped at 1 (mostly) or 2, small so that polls meet it; or, one time in four, uncapped. */
export function capArgs(random: () => number): CapArgs {
  const group = GROUPS[Math.floor(random() * GROUPS.length)]!;
  const r = random();
  return { group, max: r < 0.25 ? null : r < 0.8 ? 1 : 2 };
}

/**
 * Three grouped histories in four start with a group capped (before the
 * prefill's submits), half of those with two; the others' first caps come mid-history.
 */
export async function capBeforePrefill(queue: PlanQueue, random: () => number): Promise<void> {
  const capped = random() < 0.25 ? 0 : random() < 0.5 ? 1 : 2;
  for (let i = 0; i < capped; i++) {
    const { group, max } = capArgs(random);
    await queue.setGroupConcurrency(group, max ?? 1);
  }
}

/** Submits through the recorded queue, with the defaults left out as a caller would. */
export function submit(queue: PlanQueue, a: SubmitArgs): unknown {
  if (a.group !== undefined) {
    const options: { priority?: number; runAt?: number; group: string } = { group: a.group };
    if (a.priority !== undefined) options.priority = a.priority;
    if (a.runAt !== undefined) options.runAt = a.runAt;
    return queue.submit(a.type, a.payload, options);
  }
  if (a.priority === undefined && a.runAt === undefined) return queue.submit(a.type, a.payload);
  return queue.submit(a.type, a.payload, a.priority ?? 0, a.runAt);
}

/** Payloads written in place, by name (src/testing/in-place.ts): each call recorded, and a submit of a held name submits its bytes. */
export interface PlanReservations {
  reserve(name: string, bytes: number): unknown;
  release(name: string): unknown;
}

/** A reservation's length: mostly one the queue's shared memory holds as a run (4033 bytes on), one in six shorter (a plain array, copied). */
function reservationBytes(random: () => number): number {
  return random() < 1 / 6 ? 1000 + Math.floor(random() * 3033) : 4033 + Math.floor(random() * 2000);
}

export interface PlanContext {
  /** The recorded queue (`recorder.wrap(queue)`). */
  queue: PlanQueue;
  recorder: CallRecorder;
  clock: { now(): number; advance(ms: number): void };
  workerId: string;
  seed: number;
  calls: number;
  /** Runs before the i-th call (a start line, a progress count). */
  beforeCall(i: number): void | Promise<void>;
  /** Calls this plan never makes (a process's plan: no clock moves, no views). */
  omit?: readonly CallName[];
  /** Whether the plan also releases leases, removes jobs and edits pending ones (EditCallName). */
  edits?: boolean;
  /** Whether its submits name groups (GROUPS), and it caps and uncaps them: check such histories in `relaxed-order`. */
  groups?: boolean;
  /** Whether (and how) the plan reserves payloads to write in place, submits them later (mostly) or releases them. */
  reservations?: PlanReservations;
}

interface Held {
  job: number;
  token: number;
}

/** Makes the plan's calls in turn; a call that throws is recorded and the plan goes on. */
export async function runPlan({ queue, recorder, clock, workerId, seed, calls, beforeCall, omit = [], edits = false, groups = false, reservations }: PlanContext): Promise<void> {
  const left = [...omit, ...(edits ? [] : EDIT_CALLS), ...(groups ? [] : ['setGroupConcurrency' as const]), ...(reservations === undefined ? (['reserveBytes', 'releaseBytes'] as const) : [])];
  const random = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const held: Held[] = [];
  const old: Held[] = [];
  /** Jobs this thread failed: the ones that may be dead now. */
  const failed: number[] = [];
  /** The names of this thread's reservations neither submitted nor released yet, and how many it made. */
  const reserved: string[] = [];
  let reservationsMade = 0;
  let seen = 0;
  const leaseMillis = () => 5 + Math.floor(random() * 36);
  const anyJob = () => 1 + Math.floor(random() * (seen + 2));
  const learn = (id: unknown) => {
    const m = typeof id === 'string' ? /^J([1-9][0-9]*)$/.exec(id) : null;
    if (m !== null) seen = Math.max(seen, Number(m[1]));
  };
  const keep = (lease: unknown) => {
    if (lease === undefined || lease === null) return;
    const { jobId, token } = lease as { jobId: string; token: number };
    learn(jobId);
    held.push({ job: Number(jobId.slice(1)), token });
  };
  /** A lease to act on: mostly one held, sometimes an old one (a stale token), else a made-up one. */
  const target = (): Held => {
    if (held.length > 0 && random() < 0.85) return held.splice(Math.floor(random() * held.length), 1)[0]!;
    if (old.length > 0 && random() < 0.8) return pick(old);
    return { job: anyJob(), token: Math.floor(random() * 50) };
  };
  /** The call's value, or undefined if it threw (the recorder logged the throw). */
  const go = async (call: () => unknown): Promise<unknown> => {
    try {
      return await call();
    } catch {
      return undefined;
    }
  };

  for (let i = 0; i < calls; i++) {
    const before = beforeCall(i);
    if (before !== undefined) await before;
    const choices = WEIGHTS.filter(
      ([name]) => !left.includes(name) && (held.length > 0 || !ON_A_LEASE.includes(name) || random() < 0.15) && (name !== 'releaseBytes' || reserved.length > 0),
    );
    let r = random() * choices.reduce((sum, [, w]) => sum + w, 0);
    const name = choices.find(([, w]) => (r -= w) < 0)?.[0] ?? 'poll';
    switch (name) {
      case 'submit': {
        const args = submitArgs(random, clock.now(), groups);
        // Mostly the bytes of the oldest reservation held (the longest in flight): a name the layer below makes its bytes.
        if (reservations !== undefined && reserved.length > 0 && random() < 0.85) args.payload = reserved.shift()!;
        learn(await go(() => submit(queue, args)));
        break;
      }
      case 'poll': {
        const ms = leaseMillis();
        keep(await go(() => queue.poll(workerId, ms)));
        break;
      }
      case 'complete':
      case 'fail':
      case 'extend':
      case 'completeAndPoll': {
        const lease = target();
        const id = `J${lease.job}`;
        const third = name === 'fail' ? Math.floor(random() * (FAIL_ERRORS.length + 1)) - 1 : leaseMillis();
        const value = await go(() => {
          if (name === 'complete') return queue.complete(id, lease.token);
          if (name === 'fail') return third === -1 ? queue.fail(id, lease.token) : queue.fail(id, lease.token, FAIL_ERRORS[third]);
          if (name === 'extend') return queue.extend(id, lease.token, third);
          return queue.completeAndPoll(id, lease.token, workerId, third);
        });
        if (name === 'completeAndPoll') keep(value);
        if (name === 'fail') failed.push(lease.job);
        // An extended lease is still held; any other call ends this lease for the thread, whatever it returned.
        if (name === 'extend' && value !== undefined) held.push(lease);
        else old.push(lease);
        break;
      }
      case 'cancel': {
        const id = `J${anyJob()}`;
        await go(() => queue.cancel(id));
        break;
      }
      case 'retryDead': {
        const id = `J${failed.length > 0 && random() < 0.7 ? pick(failed) : anyJob()}`;
        await go(() => queue.retryDead(id));
        break;
      }
      case 'view': {
        const id = `J${anyJob()}`;
        const view = (await go(() => queue.view(id))) as { id?: string } | undefined;
        learn(view?.id);
        break;
      }
      case 'stats':
        await go(() => queue.stats());
        break;
      case 'release': {
        const lease = target();
        const delay = random() < 0.5 ? undefined : Math.floor(random() * 30);
        await go(() => (delay === undefined ? queue.release(`J${lease.job}`, lease.token) : queue.release(`J${lease.job}`, lease.token, { delayMillis: delay })));
        old.push(lease);
        break;
      }
      case 'remove': {
        const id = `J${failed.length > 0 && random() < 0.3 ? pick(failed) : anyJob()}`;
        await go(() => queue.remove(id));
        break;
      }
      case 'changePriority': {
        const id = `J${anyJob()}`;
        const priority = Math.floor(random() * 5) - 1;
        await go(() => queue.changePriority(id, priority));
        break;
      }
      case 'changeDelay': {
        const id = `J${anyJob()}`;
        const delay = random() < 0.3 ? 0 : Math.floor(random() * 30);
        await go(() => queue.changeDelay(id, delay));
        break;
      }
      case 'promote': {
        const id = `J${anyJob()}`;
        await go(() => queue.promote(id));
        break;
      }
      case 'updatePayload': {
        const id = `J${anyJob()}`;
        const payload = `edited ${Math.floor(random() * 1000)}`;
        await go(() => queue.updatePayload(id, payload));
        break;
      }
      case 'setGroupConcurrency': {
        const { group, max } = capArgs(random);
        await go(() => queue.setGroupConcurrency(group, max));
        break;
      }
      case 'reserveBytes': {
        const name = `${workerId}r${++reservationsMade}`;
        const bytes = reservationBytes(random);
        if ((await go(() => reservations!.reserve(name, bytes))) !== undefined) reserved.push(name);
        break;
      }
      case 'releaseBytes': {
        const name = reserved.splice(Math.floor(random() * reserved.length), 1)[0]!;
        await go(() => reservations!.release(name));
        break;
      }
      case 'advance': {
        const ms = 1 + Math.floor(random() * 25);
        recorder.advance(clock, ms);
        break;
      }
    }
  }
}
