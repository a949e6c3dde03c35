/**
 * `QueueModel`: the queue's contract as plainly as it can be written — a list of jobs,
 * linear scans, no indexes — so that it is obviously right. Never look at the
 * engine to write this.
 *
 * Two users: test/testing/model.test.ts compares it with the real queue after every
 * step of one thread's random sequence; the history checker (./checker.ts)
 * replays concurrent histories on it, which is why it can `clone()` itself and
 * name its state by `key()`, and why the clock is part of its state (`now`,
 * moved by `advance`), and why a poll's token comes from outside
 * (`acceptToken`): the queue issues tokens, the model only checks they are fresh.
 */
import { isDeepStrictEqual } from 'node:util';

export type Status = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'DEAD' | 'CANCELLED';
export type Code = 'ERR_INVALID_ARGUMENT' | 'ERR_JOB_NOT_FOUND' | 'ERR_ILLEGAL_STATE' | 'ERR_STALE_LEASE' | 'ERR_QUEUE_FULL';
export type Outcome = { ok: true; value: unknown } | { ok: false; code: Code };

export const ok = (value: unknown): Outcome => ({ ok: true, value });
export const err = (code: Code): Outcome => ({ ok: false, code });

export interface PolicySpec {
  maxAttempts: number;
  base: number;
  max: number;
}

export interface ModelJob {
  num: number;
  id: string;
  type: string;
  payload: string;
  priority: number;
  status: Status;
  attempts: number;
  runAt: number;
  lastError: string | null;
  token: number | null;
  leaseUntil: number | null;
  /** Order in which the job reached SUCCEEDED or CANCELLED (eviction is oldest first). */
  finishedSeq: number;
  /** Gone: evicted for room, or removed. */
  evicted: boolean;
  /** Every token ever handed out for this job (for "stale" token choices). */
  tokens: number[];
  /** Its submit's `group` (null: none): counted against its group's cap (`setGroupConcurrency`); the model has no turns. */
  group: string | null;
  /**
   * Still where its submit put it in its group's line: submitted ready (no
   * runAt) with a group, and since then never leased nor edited. Such jobs of
   * one group and priority are leased in submission order (`relaxed-order`).
   */
  inLine: boolean;
}

/** A lease as the model can predict it: everything but the token, which the queue chooses. */
export interface ModelLease {
  jobId: string;
  type: string;
  payload: string;
  attempt: number;
  leaseUntil: number;
}

/** The counts, and `paused`: the model never pauses, so always false. */
export type ModelStats = Record<'pending' | 'ready' | 'delayed' | 'running' | 'succeeded' | 'dead' | 'cancelled', number> & { paused: boolean };

export class QueueModel {
  now: number;
  jobs: ModelJob[] = [];
  issuedTokens = new Set<number>();
  /** The greatest token accepted so far: a new one must be greater (tokens are issued in increasing order). */
  maxToken = Number.NEGATIVE_INFINITY;
  /**
   * Jobs whose lease does not expire yet, though it may have run out: the
   * history checker's relaxed mode pins a lease while the call that made it
   * is still in flight (see `pin`).
   */
  pinned = new Set<string>();
  /**
   * The groups' concurrency caps (`setGroupConcurrency`): a poll claims a job
   * of a capped group only while fewer than its cap of the group's jobs are
   * RUNNING (see `claimable`).
   */
  groupCaps = new Map<string, number>();
  #finishCounter = 0;

  /** `onReach` hears which situation a call reached ("lease expired, dead", "eviction", ...), for coverage counts. */
  constructor(
    now: number,
    readonly policy: PolicySpec,
    readonly capacity: number,
    readonly maxPayloadBytes: number | undefined,
    readonly onReach: (what: string) => void = () => undefined,
  ) {
    this.now = now;
  }

  /** An independent copy: the checker tries one order of calls on it and drops it if that order fails. */
  clone(): QueueModel {
    const copy = new QueueModel(this.now, this.policy, this.capacity, this.maxPayloadBytes, this.onReach);
    copy.jobs = this.jobs.map((j) => ({ ...j, tokens: [...j.tokens] }));
    copy.issuedTokens = new Set(this.issuedTokens);
    copy.maxToken = this.maxToken;
    copy.pinned = new Set(this.pinned);
    copy.groupCaps = new Map(this.groupCaps);
    copy.#finishCounter = this.#finishCounter;
    copy.skippedNumbers = this.skippedNumbers;
    return copy;
  }

  /** Names everything that decides future results (not the token history kept for test choices). */
  key(): string {
    const jobs = this.jobs.map((j) =>
      [j.priority, j.status, j.attempts, j.runAt, j.lastError, j.token, j.leaseUntil, j.finishedSeq, j.evicted ? 1 : 0, j.inLine ? 1 : 0, j.payload].join(','),
    );
    const caps = [...this.groupCaps].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).join(',');
    return `${this.now};${this.maxToken};${this.#finishCounter};${this.skippedNumbers};${[...this.pinned].sort().join(',')};${caps};${jobs.join('|')}`;
  }

  backoffAfter(n: number): number {
    return Math.min(this.policy.max, this.policy.base * 2 ** (n - 1));
  }

  /** The clock moved: expiry is processed lazily by the next call, at each lease's leaseUntil. */
  advance(ms: number): void {
    this.now += ms;
  }

  /**
   * The lease of job `id`, just made by a call still in flight, does not
   * expire until `unpin`: meanwhile the job shows as RUNNING to every call,
   * and is not ready, even once the clock has passed its leaseUntil.
   */
  pin(id: string): void {
    this.pinned.add(id);
  }

  /** The call that made the lease has registered it: it expires as any other, at its leaseUntil. */
  unpin(id: string): void {
    this.pinned.delete(id);
  }

  /** Every operation, reads included, first turns expired leases (not pinned ones) into failed attempts at leaseUntil. */
  expire(): void {
    for (const j of this.jobs) {
      if (j.status === 'RUNNING' && j.leaseUntil! <= this.now && !this.pinned.has(j.id)) {
        this.onReach(j.attempts < this.policy.maxAttempts ? 'lease expired, retried' : 'lease expired, dead');
        this.#failAttempt(j, j.leaseUntil!, 'lease expired');
      }
    }
  }

  #failAttempt(j: ModelJob, at: number, error: string): void {
    j.lastError = error;
    j.token = null;
    j.leaseUntil = null;
    if (j.attempts < this.policy.maxAttempts) {
      j.status = 'PENDING';
      j.runAt = at + this.backoffAfter(j.attempts);
    } else {
      j.status = 'DEAD';
    }
  }

  #finish(j: ModelJob, status: 'SUCCEEDED' | 'CANCELLED'): void {
    j.status = status;
    j.token = null;
    j.leaseUntil = null;
    j.finishedSeq = ++this.#finishCounter;
  }

  find(id: string): ModelJob | undefined {
    return this.jobs.find((j) => j.id === id && !j.evicted);
  }

  held(): ModelJob[] {
    return this.jobs.filter((j) => !j.evicted);
  }

  #holds(j: ModelJob, token: number): boolean {
    return j.status === 'RUNNING' && j.token === token && this.now < j.leaseUntil!;
  }

  /** Job numbers no job got (see `skipId`). */
  skippedNumbers = 0;

  submit(type: unknown, payload: string | null | undefined, priority: number | undefined, runAt: number | undefined, group?: string): Outcome {
    this.expire();
    if (typeof type !== 'string' || type.trim() === '') return err('ERR_INVALID_ARGUMENT');
    if (priority !== undefined && !Number.isInteger(priority)) return err('ERR_INVALID_ARGUMENT');
    if (runAt !== undefined && !Number.isFinite(runAt)) return err('ERR_INVALID_ARGUMENT');
    const body = payload ?? '';
    if (this.maxPayloadBytes !== undefined && Buffer.byteLength(body, 'utf8') > this.maxPayloadBytes) {
      return err('ERR_INVALID_ARGUMENT');
    }
    if (!this.makeRoom()) return err('ERR_QUEUE_FULL');
    const num = this.jobs.length + 1 + this.skippedNumbers;
    this.jobs.push({
      num,
      id: `J${num}`,
      type,
      payload: body,
      priority: priority ?? 0,
      status: 'PENDING',
      attempts: 0,
      runAt: runAt ?? this.now,
      lastError: null,
      token: null,
      leaseUntil: null,
      finishedSeq: 0,
      evicted: false,
      tokens: [],
      group: group ?? null,
      inLine: group !== undefined && runAt === undefined,
    });
    return ok(`J${num}`);
  }

  /**
   * Room for one more job: if the queue is full, its oldest finished job
   * (SUCCEEDED or CANCELLED) is evicted; false if it is full of others. What
   * a submit does first, before it takes its id (also one killed after it).
   */
  makeRoom(): boolean {
    const held = this.held();
    if (held.length < this.capacity) return true;
    const finished = held.filter((j) => j.status === 'SUCCEEDED' || j.status === 'CANCELLED').sort((a, b) => a.finishedSeq - b.finishedSeq);
    if (finished.length === 0) return false;
    finished[0]!.evicted = true;
    this.onReach(finished.length > 1 ? 'eviction, oldest of several' : 'eviction');
    return true;
  }

  /** The next id is taken and no job ever has it: what a submit whose thread was killed inside it may leave (the checker's pending submits). */
  skipId(): void {
    this.skippedNumbers++;
  }

  /** PENDING jobs whose runAt has come: the ones a poll may lease now. Call after `expire()`. */
  ready(): ModelJob[] {
    return this.held().filter((j) => j.status === 'PENDING' && j.runAt <= this.now);
  }

  /**
   * The ready jobs a poll may claim now: those whose group's cap (if any) has
   * room. A ready job of a group at its cap stays PENDING and ready (stats
   * count it) and is passed over; a pinned lease, RUNNING though run out,
   * takes its group's place as any other (it has not expired yet). Call after `expire()`.
   */
  claimable(): ModelJob[] {
    return this.ready().filter((j) => this.capRefusal(j) === undefined);
  }

  /** Why a poll may not claim ready job `j` now (its group is at its cap), or undefined if it may. */
  capRefusal(j: ModelJob): string | undefined {
    const cap = j.group === null ? undefined : this.groupCaps.get(j.group);
    if (cap === undefined) return undefined;
    const running = this.held().filter((r) => r.status === 'RUNNING' && r.group === j.group).length;
    return running < cap ? undefined : `its group ${j.group} is at its cap (${running} RUNNING, cap ${cap})`;
  }

  /** The best claimable job (highest priority, then earliest runAt, then submission), or undefined. */
  best(): ModelJob | undefined {
    let best: ModelJob | undefined;
    for (const j of this.claimable()) if (best === undefined || isBetter(j, best)) best = j;
    return best;
  }

  /** The lease without its token (the model cannot know tokens; the caller records the real one with `acceptToken`). */
  poll(workerId: unknown, leaseMillis: unknown): Outcome {
    this.expire();
    const refused = checkPollArguments(workerId, leaseMillis);
    if (refused !== undefined) return refused;
    const best = this.best();
    return best === undefined ? ok(undefined) : ok(this.#lease(best, leaseMillis as number));
  }

  /**
   * The claim of one named job, for a poll that may return any claimable job
   * (the relaxed mode of the history checker): its lease, or why that job
   * may not be claimed now (not ready, or its group at its cap).
   */
  pollJob(jobId: string, leaseMillis: number): ModelLease | string {
    this.expire();
    const j = this.ready().find((r) => r.id === jobId);
    if (j === undefined) return `${jobId} is not a ready job here`;
    const refused = this.capRefusal(j);
    return refused === undefined ? this.#lease(j, leaseMillis) : `${jobId} may not be leased here: ${refused}`;
  }

  #lease(j: ModelJob, leaseMillis: number): ModelLease {
    j.status = 'RUNNING';
    j.inLine = false;
    j.attempts += 1;
    j.leaseUntil = this.now + leaseMillis;
    j.token = null; // filled in by acceptToken
    return { jobId: j.id, type: j.type, payload: j.payload, attempt: j.attempts, leaseUntil: j.leaseUntil };
  }

  /** The lease just made on `jobId` ran from an earlier reading of the clock: it ends at `leaseUntil` instead. */
  endLeaseAt(jobId: string, leaseUntil: number): void {
    this.find(jobId)!.leaseUntil = leaseUntil;
  }

  acceptToken(jobId: string, token: number): void {
    const j = this.find(jobId)!;
    j.token = token;
    j.tokens.push(token);
    this.issuedTokens.add(token);
    this.maxToken = Math.max(this.maxToken, token);
  }

  complete(id: string, token: number): Outcome {
    this.expire();
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    if (!this.#holds(j, token)) return err('ERR_STALE_LEASE');
    this.#finish(j, 'SUCCEEDED');
    return ok(undefined);
  }

  /** `complete`, then `poll` in the same step; the poll's arguments are checked first, and a refused complete polls nothing. */
  completeAndPoll(id: string, token: number, workerId: unknown, leaseMillis: unknown): Outcome {
    const refused = checkPollArguments(workerId, leaseMillis);
    if (refused !== undefined) return refused;
    const completed = this.complete(id, token);
    return completed.ok ? this.poll(workerId, leaseMillis) : completed;
  }

  fail(id: string, token: number, error: string | null | undefined): Outcome {
    this.expire();
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    if (!this.#holds(j, token)) return err('ERR_STALE_LEASE');
    this.#failAttempt(j, this.now, error ?? 'failed');
    return ok(undefined);
  }

  extend(id: string, token: number, leaseMillis: unknown): Outcome {
    this.expire();
    if (!validMillis(leaseMillis)) return err('ERR_INVALID_ARGUMENT');
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    if (!this.#holds(j, token)) return err('ERR_STALE_LEASE');
    j.leaseUntil = this.now + leaseMillis;
    return ok(j.leaseUntil);
  }

  cancel(id: string): Outcome {
    this.expire();
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    // A RUNNING job's lease ends with it (its attempt stays counted); an expired one was PENDING again first.
    if (j.status !== 'PENDING' && j.status !== 'RUNNING') return err('ERR_ILLEGAL_STATE');
    this.onReach(j.status === 'RUNNING' ? 'cancel running' : 'cancel pending');
    this.#finish(j, 'CANCELLED');
    return ok(undefined);
  }

  retryDead(id: string): Outcome {
    this.expire();
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    if (j.status !== 'DEAD') return err('ERR_ILLEGAL_STATE');
    j.status = 'PENDING';
    j.attempts = 0;
    j.runAt = this.now;
    return ok(undefined);
  }

  /** Hands the lease back unfinished: PENDING, ready `delayMillis` from now, the attempt not counted, lastError kept. */
  release(id: string, token: number, delayMillis: unknown = 0): Outcome {
    this.expire();
    if (!validSpan(delayMillis)) return err('ERR_INVALID_ARGUMENT');
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    if (!this.#holds(j, token)) return err('ERR_STALE_LEASE');
    this.onReach(delayMillis > 0 ? 'release, snoozed' : 'release');
    j.status = 'PENDING';
    j.attempts -= 1;
    j.runAt = this.now + delayMillis;
    j.token = null;
    j.leaseUntil = null;
    return ok(undefined);
  }

  /** A job that is not RUNNING is gone, as an evicted one; a RUNNING one is refused. */
  remove(id: string): Outcome {
    this.expire();
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    if (j.status === 'RUNNING') return err('ERR_ILLEGAL_STATE');
    this.onReach(`remove ${j.status.toLowerCase()}`);
    j.evicted = true;
    return ok(undefined);
  }

  changePriority(id: string, priority: unknown): Outcome {
    if (typeof priority !== 'number' || !Number.isInteger(priority)) return err('ERR_INVALID_ARGUMENT');
    return this.#edit(id, 'change priority', (j) => {
      j.priority = priority;
    });
  }

  changeDelay(id: string, delayMillis: unknown): Outcome {
    if (!validSpan(delayMillis)) return err('ERR_INVALID_ARGUMENT');
    return this.#edit(id, 'change delay', (j) => {
      j.runAt = this.now + delayMillis;
    });
  }

  /** A delayed job ready now; a ready one left as it is. */
  promote(id: string): Outcome {
    return this.#edit(id, 'promote', (j) => {
      if (j.runAt > this.now) j.runAt = this.now;
    });
  }

  updatePayload(id: string, payload: string | null | undefined): Outcome {
    const body = payload ?? '';
    if (this.maxPayloadBytes !== undefined && Buffer.byteLength(body, 'utf8') > this.maxPayloadBytes) return err('ERR_INVALID_ARGUMENT');
    return this.#edit(id, 'update payload', (j) => {
      j.payload = body;
    });
  }

  /** An edit of a PENDING job (arguments checked by the caller first, then the id, then the status). */
  #edit(id: string, what: string, change: (j: ModelJob) => void): Outcome {
    this.expire();
    const j = this.find(id);
    if (j === undefined) return err('ERR_JOB_NOT_FOUND');
    if (j.status !== 'PENDING') return err('ERR_ILLEGAL_STATE');
    this.onReach(what);
    change(j);
    // Filed ready again: a new turn, at the end of its group's line.
    j.inLine = false;
    return ok(undefined);
  }

  /**
   * Caps (max, an integer from 1 to 2,147,483,647) or uncaps (max null) how
   * many jobs of `group` may be RUNNING. A lowered cap stops no running job:
   * only later claims wait.
   */
  setGroupConcurrency(group: unknown, max: unknown): Outcome {
    this.expire();
    if (typeof group !== 'string' || group.trim() === '' || Buffer.byteLength(group, 'utf8') > MAX_GROUP_BYTES) return err('ERR_INVALID_ARGUMENT');
    if (max === null) {
      if (this.groupCaps.delete(group)) this.onReach('group cap cleared');
      return ok(undefined);
    }
    if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_CAP) return err('ERR_INVALID_ARGUMENT');
    this.onReach(this.groupCaps.has(group) ? 'group cap changed' : 'group cap set');
    this.groupCaps.set(group, max);
    return ok(undefined);
  }

  view(id: string): Outcome {
    this.expire();
    const j = this.find(id);
    return j === undefined ? err('ERR_JOB_NOT_FOUND') : ok(modelView(j));
  }

  deadLetters(): unknown[] {
    this.expire();
    return this.held()
      .filter((j) => j.status === 'DEAD')
      .map(modelView);
  }

  stats(): ModelStats {
    this.expire();
    const held = this.held();
    const count = (p: (j: ModelJob) => boolean) => held.filter(p).length;
    return {
      pending: count((j) => j.status === 'PENDING'),
      ready: count((j) => j.status === 'PENDING' && j.runAt <= this.now),
      delayed: count((j) => j.status === 'PENDING' && j.runAt > this.now),
      running: count((j) => j.status === 'RUNNING'),
      succeeded: count((j) => j.status === 'SUCCEEDED'),
      dead: count((j) => j.status === 'DEAD'),
      cancelled: count((j) => j.status === 'CANCELLED'),
      paused: false,
    };
  }
}

/** The order of best jobs: higher priority, then earlier runAt, then earlier submission. */
export function isBetter(a: ModelJob, b: ModelJob): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.runAt !== b.runAt) return a.runAt < b.runAt;
  return a.num < b.num;
}

/**
 * The order of the `relaxed-order` mode (docs/concurrency.md): a higher
 * priority is better, and within a priority, in one group, a job still in its
 * group's line (`inLine`) is better than a later one in it. Turns order the
 * rest of a priority's jobs, and the model has none.
 */
export function isBetterInGroupOrder(a: ModelJob, b: ModelJob): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  return a.inLine && b.inLine && a.group === b.group && a.num < b.num;
}

/** The longest group name (UTF-8 bytes) and the greatest cap a queue takes (docs/api.md, Groups). */
const MAX_GROUP_BYTES = 124;
const MAX_CAP = 2_147_483_647;

export function checkPollArguments(workerId: unknown, leaseMillis: unknown): Outcome | undefined {
  if (typeof workerId !== 'string' || workerId.trim() === '') return err('ERR_INVALID_ARGUMENT');
  if (!validMillis(leaseMillis)) return err('ERR_INVALID_ARGUMENT');
  return undefined;
}

/** A span of time from 0 on: `delayMillis` of release and changeDelay. */
function validSpan(ms: unknown): ms is number {
  return typeof ms === 'number' && ms >= 0 && ms <= Number.MAX_SAFE_INTEGER;
}

function validMillis(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && ms > 0;
}

/** The spec's JobView fields plus the two optional ones this engine documents (payload, leaseUntil). */
export function modelView(j: ModelJob): Record<string, unknown> {
  return {
    id: j.id,
    type: j.type,
    priority: j.priority,
    status: j.status,
    attempts: j.attempts,
    nextRunAt: j.runAt,
    lastError: j.lastError,
    payload: j.payload,
    leaseUntil: j.status === 'RUNNING' ? j.leaseUntil : null,
  };
}

const REQUIRED_VIEW_FIELDS = ['id', 'type', 'priority', 'status', 'attempts', 'nextRunAt', 'lastError'] as const;
const OPTIONAL_VIEW_FIELDS = ['payload', 'leaseUntil'] as const;

/** Whether a real view agrees with the model's on the fields the model can speak for: the required ones, and the optional ones if present. */
export function sameView(real: unknown, expected: Record<string, unknown>): boolean {
  const [got, want] = comparableView(real, expected);
  return isDeepStrictEqual(got, want);
}

/** The fields of a real view that the model can speak for, side by side with the model's. */
export function comparableView(real: unknown, expected: Record<string, unknown>): [Record<string, unknown>, Record<string, unknown>] {
  const r = real as Record<string, unknown>;
  const got: Record<string, unknown> = {};
  const want: Record<string, unknown> = {};
  for (const k of REQUIRED_VIEW_FIELDS) {
    got[k] = r[k];
    want[k] = expected[k];
  }
  for (const k of OPTIONAL_VIEW_FIELDS) {
    if (k in r) {
      got[k] = r[k];
      want[k] = expected[k];
    }
  }
  return [got, want];
}
