/**
 * Model-based tests: random operation sequences run against the real queue and
 * against `QueueModel` (`leasehold/testing`, src/testing/model.ts), a deliberately naive
 * executable copy of the queue's contract (plain arrays, linear scans, no indexes).
 * After every step the test compares what the call returned (or the error
 * code it threw), then `stats()`, `queueDepth()`, `dlqDepth()`,
 * `deadLetters()` and `view()` of every job.
 *
 * Operations are generated abstractly ("complete job #k with its current
 * token") and resolved against the model's state when they run, so fast-check
 * can shrink a failing sequence to a few steps. Reproduce a failure with
 * LEASEHOLD_SEED=<seed printed by the run>.
 */
import { isDeepStrictEqual, inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JobNotFoundError, JobQueue, JobQueueError, ManualClock, RetryPolicy } from '../../dist/index.js';
import { testSeed } from '../support/helpers.js';
import { QueueModel, comparableView, modelView, type Outcome, type PolicySpec, type Status } from '../../dist/testing/index.js';

// ── operations ──────────────────────────────────────────────────────────

/** Which job an operation names: the i-th job (of those in `status`, if any is), a bad id, or the next id. */
type JobRef = { kind: 'pick'; i: number; status: Status | 'any' } | { kind: 'raw'; id: string } | { kind: 'next' };
type TokenChoice = 'current' | 'stale' | 'other' | 'zero' | 'negative' | 'unissued' | 'wrap32';

type Op =
  | { op: 'submit'; type: string; payload: string | null | undefined; priority: number | undefined; runAtOffset: number | undefined }
  | { op: 'poll'; worker: string; leaseMillis: number }
  | { op: 'complete'; job: JobRef; token: TokenChoice; pick: number }
  | { op: 'fail'; job: JobRef; token: TokenChoice; pick: number; error: string | null | undefined }
  | { op: 'extend'; job: JobRef; token: TokenChoice; pick: number; leaseMillis: number }
  | { op: 'cancel'; job: JobRef }
  | { op: 'retryDead'; job: JobRef }
  | { op: 'release'; job: JobRef; token: TokenChoice; pick: number; delayMillis: number | undefined }
  | { op: 'remove'; job: JobRef }
  | { op: 'changePriority'; job: JobRef; priority: number }
  | { op: 'changeDelay'; job: JobRef; delayMillis: number }
  | { op: 'promote'; job: JobRef }
  | { op: 'updatePayload'; job: JobRef; payload: string | null | undefined }
  | { op: 'view'; job: JobRef }
  | { op: 'advance'; ms: number }
  | { op: 'toLeaseEnd'; pick: number; delta: number }
  | { op: 'toRunAt'; pick: number };

/** Ids that name no job: malformed, or well-formed but never issued. */
const BAD_IDS = ['', 'x', 'J', 'J0', 'J-1', 'J01', 'j1', ' J1', 'J1 ', 'J1.0', 'J+1', 'J1e0', 'J0x1', 'J９', 'J9007199254740993', 'J99999'];

interface GenConfig {
  /** Fractional milliseconds (quarters) in leases, clock moves and runAt. */
  fractional: boolean;
  /** Priorities, offsets and leases far outside the usual range. */
  wide: boolean;
  /** Many submits, cancels and completes, few failures: for the capacity property. */
  churn: boolean;
}

function opArbitrary(cfg: GenConfig): fc.Arbitrary<Op> {
  const millis = (min: number, max: number): fc.Arbitrary<number> =>
    cfg.fractional ? fc.integer({ min: min * 4, max: max * 4 }).map((q) => q / 4) : fc.integer({ min, max });
  const positiveLease = cfg.fractional
    ? fc.integer({ min: 1, max: 1200 }).map((q) => q / 4)
    : fc.integer({ min: 1, max: 300 });
  const wideLease = fc.constantFrom(1, 2 ** 31, 2 ** 32 + 7, 1e12);
  const leaseMillis = fc.oneof(
    { weight: 12, arbitrary: positiveLease },
    { weight: cfg.wide ? 3 : 0, arbitrary: wideLease },
    { weight: 1, arbitrary: fc.constantFrom(0, -5, Number.NaN, Number.POSITIVE_INFINITY, -0) },
  );
  const jobRef = (likely: Status | 'any'): fc.Arbitrary<JobRef> =>
    fc.oneof(
      { weight: 10, arbitrary: fc.nat(1000).map((i): JobRef => ({ kind: 'pick', i, status: likely })) },
      { weight: 4, arbitrary: fc.nat(1000).map((i): JobRef => ({ kind: 'pick', i, status: 'any' })) },
      { weight: 1, arbitrary: fc.constantFrom(...BAD_IDS).map((id): JobRef => ({ kind: 'raw', id })) },
      { weight: 1, arbitrary: fc.constant<JobRef>({ kind: 'next' }) },
    );
  const token = fc.oneof(
    { weight: 10, arbitrary: fc.constant<TokenChoice>('current') },
    { weight: 5, arbitrary: fc.constantFrom<TokenChoice>('stale', 'other', 'zero', 'negative', 'unissued', 'wrap32') },
  );
  const wellFormed = fc.string({ unit: 'binary', maxLength: 10 }).filter((s) => s.isWellFormed());
  const payload = fc.oneof(
    { weight: 6, arbitrary: cfg.churn ? fc.string({ unit: 'binary', maxLength: 4 }).filter((s) => s.isWellFormed()) : wellFormed },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
    { weight: 1, arbitrary: fc.constantFrom<string | null | undefined>(null, undefined, '', '\u0000', '\u{1F600}'.repeat(5)) },
  );
  const type = fc.oneof(
    { weight: 10, arbitrary: fc.constantFrom('email', 'invoice', 'resize', 'ünïcødé', 'a b', '\u{1F4E7}') },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '\t\n', '\u00a0', '\u3000') },
  );
  const priority = fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 10, arbitrary: fc.integer({ min: -2, max: 2 }) },
    {
      weight: cfg.wide ? 4 : 0,
      arbitrary: fc.constantFrom(2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, 2 ** 40, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER),
    },
    { weight: 1, arbitrary: fc.constantFrom(0.5, -1.25, Number.NaN, Number.POSITIVE_INFINITY) },
  );
  const runAtOffset = fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 10, arbitrary: millis(-60, 240) },
    { weight: cfg.wide ? 3 : 0, arbitrary: fc.constantFrom(-1e12, 1e12, -(2 ** 33), 2 ** 33) },
    { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY) },
  );
  const error = fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: 8 }) },
    { weight: 1, arbitrary: fc.constantFrom<string | null | undefined>(null, undefined, '', 'lease expired', 'ünï\u{1F4A5}') },
  );
  const worker = fc.oneof(
    { weight: 10, arbitrary: fc.constantFrom('w1', 'w2', 'wörker') },
    { weight: 1, arbitrary: fc.constantFrom('', '  ') },
  );
  const w = (n: number, churnN = n) => (cfg.churn ? churnN : n);
  return fc.oneof(
    {
      weight: w(6, 8),
      arbitrary: fc.record({ op: fc.constant('submit' as const), type, payload, priority, runAtOffset }),
    },
    { weight: w(6), arbitrary: fc.record({ op: fc.constant('poll' as const), worker, leaseMillis }) },
    { weight: w(4, 6), arbitrary: fc.record({ op: fc.constant('complete' as const), job: jobRef('RUNNING'), token, pick: fc.nat(1000) }) },
    { weight: w(3, 1), arbitrary: fc.record({ op: fc.constant('fail' as const), job: jobRef('RUNNING'), token, pick: fc.nat(1000), error }) },
    {
      weight: w(2, 1),
      arbitrary: fc.record({ op: fc.constant('extend' as const), job: jobRef('RUNNING'), token, pick: fc.nat(1000), leaseMillis }),
    },
    { weight: w(2, 4), arbitrary: fc.record({ op: fc.constant('cancel' as const), job: jobRef('PENDING') }) },
    { weight: w(1), arbitrary: fc.record({ op: fc.constant('cancel' as const), job: jobRef('RUNNING') }) },
    { weight: w(2, 1), arbitrary: fc.record({ op: fc.constant('retryDead' as const), job: jobRef('DEAD') }) },
    {
      weight: w(1),
      arbitrary: fc.record({
        op: fc.constant('release' as const),
        job: jobRef('RUNNING'),
        token,
        pick: fc.nat(1000),
        delayMillis: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 4, arbitrary: millis(0, 200) }, { weight: 1, arbitrary: fc.constantFrom(-1, Number.NaN) }),
      }),
    },
    { weight: w(1), arbitrary: fc.record({ op: fc.constant('remove' as const), job: jobRef('any') }) },
    { weight: w(1), arbitrary: fc.record({ op: fc.constant('changePriority' as const), job: jobRef('PENDING'), priority: priority.map((p) => p ?? 3) }) },
    {
      weight: w(1),
      arbitrary: fc.record({ op: fc.constant('changeDelay' as const), job: jobRef('PENDING'), delayMillis: fc.oneof({ weight: 6, arbitrary: millis(0, 200) }, { weight: 1, arbitrary: fc.constantFrom(-1, Number.NaN) }) }),
    },
    { weight: w(1), arbitrary: fc.record({ op: fc.constant('promote' as const), job: jobRef('PENDING') }) },
    { weight: w(1), arbitrary: fc.record({ op: fc.constant('updatePayload' as const), job: jobRef('PENDING'), payload }) },
    { weight: w(1), arbitrary: fc.record({ op: fc.constant('view' as const), job: jobRef('any') }) },
    { weight: w(3), arbitrary: fc.record({ op: fc.constant('advance' as const), ms: millis(0, 150) }) },
    {
      weight: w(3, 1),
      arbitrary: fc.record({
        op: fc.constant('toLeaseEnd' as const),
        pick: fc.nat(1000),
        delta: fc.constantFrom(0, 0, 0, -1, 1, cfg.fractional ? -0.25 : 0),
      }),
    },
    { weight: w(1), arbitrary: fc.record({ op: fc.constant('toRunAt' as const), pick: fc.nat(1000) }) },
  );
}

// ── running a sequence ──────────────────────────────────────────────────

interface Scenario {
  policy: PolicySpec;
  capacity: number;
  maxPayloadBytes: number | undefined;
  ops: Op[];
}

const START = 1_767_225_600_000; // 2026-01-01T00:00:00Z: real clocks are far past 2^32 ms

class Mismatch extends Error {}

/**
 * What the sequences reached, per property ("complete ok", "submit ERR_QUEUE_FULL",
 * "expiry", "eviction", ...): printed, and the key situations are asserted, so a
 * generator that stops reaching them fails instead of passing vacuously.
 */
let coverage = new Map<string, number>();
const reached = (what: string) => coverage.set(what, (coverage.get(what) ?? 0) + 1);

function outcomeOf(fn: () => unknown): { ok: true; value: unknown } | { ok: false; code: unknown; error: unknown } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, code: (error as { code?: unknown }).code, error };
  }
}

function show(v: unknown): string {
  return inspect(v, { depth: 6, breakLength: 120 });
}

function runScenario(s: Scenario): void {
  const clock = new ManualClock(START);
  const policy = new RetryPolicy(s.policy.maxAttempts, s.policy.base, s.policy.max);
  const options: Record<string, number> = { capacity: s.capacity };
  if (s.maxPayloadBytes !== undefined) {
    options['maxPayloadBytes'] = s.maxPayloadBytes;
    options['arenaBytes'] = 1 << 20;
  }
  const queue = new JobQueue(clock, policy, options);
  const model = new QueueModel(START, s.policy, s.capacity, s.maxPayloadBytes, reached);
  const trace: string[] = [];

  const fail = (step: number, what: string, got: unknown, want: unknown): never => {
    throw new Mismatch(
      `step ${step}: ${what}\n  engine: ${show(got)}\n  model:  ${show(want)}\n` +
        `  now = ${model.now} (START + ${model.now - START})\n  trace:\n    ${trace.join('\n    ')}`,
    );
  };

  const resolveJob = (ref: JobRef): string => {
    if (ref.kind === 'raw') return ref.id;
    if (ref.kind === 'next') return `J${model.jobs.length + 1}`;
    const live = model.jobs.filter((j) => !j.evicted && (ref.status === 'any' || j.status === ref.status));
    const from = live.length > 0 ? live : model.jobs;
    if (from.length === 0) return 'J1';
    return from[ref.i % from.length]!.id;
  };

  const resolveToken = (id: string, choice: TokenChoice, pick: number): number => {
    const job = model.jobs.find((j) => j.id === id);
    const issued = [...model.issuedTokens];
    const anyIssued = issued.length > 0 ? issued[pick % issued.length]! : 1;
    const maxIssued = issued.length > 0 ? Math.max(...issued) : 0;
    switch (choice) {
      case 'current':
        if (job?.token != null) return job.token;
        return job !== undefined && job.tokens.length > 0 ? job.tokens[job.tokens.length - 1]! : anyIssued;
      case 'stale': {
        const old = job?.tokens.filter((t) => t !== job.token) ?? [];
        return old.length > 0 ? old[pick % old.length]! : anyIssued;
      }
      case 'other': {
        const others = model.jobs.filter((j) => j.id !== id && j.token != null);
        return others.length > 0 ? others[pick % others.length]!.token! : anyIssued;
      }
      case 'zero':
        return 0;
      case 'negative':
        return -1 - (pick % 3);
      case 'unissued':
        return maxIssued + 1 + (pick % 5);
      case 'wrap32':
        // The current token plus 2^32 (and 2^31): equal to it only if the engine drops high bits.
        return (job?.token ?? anyIssued) + (pick % 2 === 0 ? 2 ** 32 : 2 ** 31);
    }
  };

  /** Compares an engine outcome with the model's; returns the engine's value. */
  const check = (step: number, what: string, real: ReturnType<typeof outcomeOf>, want: Outcome): unknown => {
    reached(want.ok ? `${what} ok` : `${what} ${want.code}`);
    if (want.ok && !real.ok) fail(step, `${what} threw`, real.error, want.value);
    if (!want.ok && real.ok) fail(step, `${what} returned instead of throwing ${want.code}`, real.value, want.code);
    if (!want.ok && !real.ok) {
      if (real.code !== want.code || !(real.error instanceof JobQueueError)) fail(step, `${what} threw the wrong error`, real.error, want.code);
      return undefined;
    }
    return real.ok ? real.value : undefined;
  };

  const compareAll = (step: number): void => {
    const wantStats = model.stats();
    const gotStats = { ...queue.stats() };
    if (!isDeepStrictEqual(gotStats, wantStats)) fail(step, 'stats()', gotStats, wantStats);
    if (queue.queueDepth() !== wantStats['pending']) fail(step, 'queueDepth()', queue.queueDepth(), wantStats['pending']);
    if (queue.dlqDepth() !== wantStats['dead']) fail(step, 'dlqDepth()', queue.dlqDepth(), wantStats['dead']);
    const wantDead = model.deadLetters() as Record<string, unknown>[];
    const gotDead = queue.deadLetters();
    if (gotDead.length !== wantDead.length) fail(step, 'deadLetters()', gotDead, wantDead);
    gotDead.forEach((v, i) => {
      const [g, w] = comparableView(v, wantDead[i]!);
      if (!isDeepStrictEqual(g, w)) fail(step, `deadLetters()[${i}]`, g, w);
    });
    for (const j of model.jobs) {
      const got = outcomeOf(() => queue.view(j.id));
      if (j.evicted) {
        if (got.ok || !(got.error instanceof JobNotFoundError) || !/evict/i.test((got.error as Error).message)) {
          fail(step, `view(${j.id}) of an evicted job: JobNotFoundError saying "evicted"`, got.ok ? got.value : got.error, 'evicted');
        }
        continue;
      }
      if (!got.ok) fail(step, `view(${j.id}) threw`, got.error, modelView(j));
      const [g, w] = comparableView(got.ok ? got.value : undefined, modelView(j));
      if (!isDeepStrictEqual(g, w)) fail(step, `view(${j.id})`, g, w);
    }
  };

  try {
    s.ops.forEach((op, step) => {
      switch (op.op) {
        case 'submit': {
          const runAt = op.runAtOffset === undefined ? undefined : model.now + op.runAtOffset;
          trace.push(`submit(${show(op.type)}, ${show(op.payload)}, ${op.priority}, ${runAt})`);
          const want = model.submit(op.type, op.payload, op.priority, runAt);
          const real = outcomeOf(() =>
            runAt === undefined && op.priority === undefined
              ? queue.submit(op.type, op.payload)
              : queue.submit(op.type, op.payload, op.priority, runAt),
          );
          const id = check(step, 'submit', real, want);
          if (want.ok && id !== want.value) fail(step, 'submit id', id, want.value);
          break;
        }
        case 'poll': {
          trace.push(`poll(${show(op.worker)}, ${op.leaseMillis})`);
          const want = model.poll(op.worker, op.leaseMillis);
          const real = outcomeOf(() => queue.poll(op.worker, op.leaseMillis));
          const lease = check(step, 'poll', real, want) as Record<string, unknown> | undefined;
          if (!want.ok) break;
          if (want.value === undefined) {
            if (lease !== undefined) fail(step, 'poll handed out a job', lease, undefined);
            break;
          }
          if (lease === undefined) fail(step, 'poll returned nothing', lease, want.value);
          const { token, ...rest } = lease!;
          const restWant = want.value as Record<string, unknown>;
          const restGot: Record<string, unknown> = {};
          for (const k of Object.keys(restWant)) restGot[k] = rest[k];
          if (!isDeepStrictEqual(restGot, restWant)) fail(step, 'poll lease', lease, want.value);
          if (typeof token !== 'number' || !Number.isFinite(token)) fail(step, 'lease token is a finite number', token, 'number');
          if (model.issuedTokens.has(token as number)) fail(step, 'lease token is fresh', token, [...model.issuedTokens]);
          model.acceptToken(restWant['jobId'] as string, token as number);
          trace[trace.length - 1] += ` -> ${restWant['jobId']} token ${token}`;
          break;
        }
        case 'complete': {
          const id = resolveJob(op.job);
          const token = resolveToken(id, op.token, op.pick);
          trace.push(`complete(${show(id)}, ${token} [${op.token}])`);
          check(step, 'complete', outcomeOf(() => queue.complete(id, token)), model.complete(id, token));
          break;
        }
        case 'fail': {
          const id = resolveJob(op.job);
          const token = resolveToken(id, op.token, op.pick);
          trace.push(`fail(${show(id)}, ${token} [${op.token}], ${show(op.error)})`);
          check(step, 'fail', outcomeOf(() => queue.fail(id, token, op.error)), model.fail(id, token, op.error));
          break;
        }
        case 'extend': {
          const id = resolveJob(op.job);
          const token = resolveToken(id, op.token, op.pick);
          trace.push(`extend(${show(id)}, ${token} [${op.token}], ${op.leaseMillis})`);
          const want = model.extend(id, token, op.leaseMillis);
          const got = check(step, 'extend', outcomeOf(() => queue.extend(id, token, op.leaseMillis)), want);
          if (want.ok && got !== want.value) fail(step, 'extend result (new leaseUntil)', got, want.value);
          break;
        }
        case 'cancel': {
          const id = resolveJob(op.job);
          trace.push(`cancel(${show(id)})`);
          check(step, 'cancel', outcomeOf(() => queue.cancel(id)), model.cancel(id));
          break;
        }
        case 'retryDead': {
          const id = resolveJob(op.job);
          trace.push(`retryDead(${show(id)})`);
          check(step, 'retryDead', outcomeOf(() => queue.retryDead(id)), model.retryDead(id));
          break;
        }
        case 'release': {
          const id = resolveJob(op.job);
          const token = resolveToken(id, op.token, op.pick);
          trace.push(`release(${show(id)}, ${token} [${op.token}], ${op.delayMillis})`);
          const real = outcomeOf(() => (op.delayMillis === undefined ? queue.release(id, token) : queue.release(id, token, { delayMillis: op.delayMillis })));
          check(step, 'release', real, model.release(id, token, op.delayMillis));
          break;
        }
        case 'remove': {
          const id = resolveJob(op.job);
          trace.push(`remove(${show(id)})`);
          check(step, 'remove', outcomeOf(() => queue.remove(id)), model.remove(id));
          break;
        }
        case 'changePriority': {
          const id = resolveJob(op.job);
          trace.push(`changePriority(${show(id)}, ${op.priority})`);
          check(step, 'changePriority', outcomeOf(() => queue.changePriority(id, op.priority)), model.changePriority(id, op.priority));
          break;
        }
        case 'changeDelay': {
          const id = resolveJob(op.job);
          trace.push(`changeDelay(${show(id)}, ${op.delayMillis})`);
          check(step, 'changeDelay', outcomeOf(() => queue.changeDelay(id, op.delayMillis)), model.changeDelay(id, op.delayMillis));
          break;
        }
        case 'promote': {
          const id = resolveJob(op.job);
          trace.push(`promote(${show(id)})`);
          check(step, 'promote', outcomeOf(() => queue.promote(id)), model.promote(id));
          break;
        }
        case 'updatePayload': {
          const id = resolveJob(op.job);
          trace.push(`updatePayload(${show(id)}, ${show(op.payload)})`);
          check(step, 'updatePayload', outcomeOf(() => queue.updatePayload(id, op.payload as string)), model.updatePayload(id, op.payload));
          break;
        }
        case 'view': {
          const id = resolveJob(op.job);
          trace.push(`view(${show(id)})`);
          const want = model.view(id);
          const got = check(step, 'view', outcomeOf(() => queue.view(id)), want);
          if (want.ok) {
            const [g, w] = comparableView(got, want.value as Record<string, unknown>);
            if (!isDeepStrictEqual(g, w)) fail(step, 'view', g, w);
          }
          break;
        }
        case 'advance': {
          trace.push(`clock.advance(${op.ms})`);
          clock.advance(op.ms);
          model.now += op.ms;
          break;
        }
        case 'toLeaseEnd': {
          // Move the clock to exactly a running job's leaseUntil (or one step either side).
          model.expire();
          const running = model.jobs.filter((j) => j.status === 'RUNNING' && !j.evicted);
          if (running.length === 0) break;
          const target = running[op.pick % running.length]!.leaseUntil! + op.delta;
          if (target <= model.now) break;
          trace.push(`clock.set(leaseUntil of ${running[op.pick % running.length]!.id} ${op.delta >= 0 ? '+' : ''}${op.delta})`);
          clock.set(target);
          model.now = target;
          break;
        }
        case 'toRunAt': {
          model.expire();
          const delayed = model.jobs.filter((j) => j.status === 'PENDING' && !j.evicted && j.runAt > model.now);
          if (delayed.length === 0) break;
          const target = delayed[op.pick % delayed.length]!.runAt;
          trace.push(`clock.set(runAt of ${delayed[op.pick % delayed.length]!.id})`);
          clock.set(target);
          model.now = target;
          break;
        }
      }
      if (clock.now() !== model.now) fail(step, 'clock', clock.now(), model.now);
      compareAll(step);
    });
  } finally {
    void queue.close();
  }
}

// ── arbitraries for whole scenarios ────────────────────────────────────────

const policyArb: fc.Arbitrary<PolicySpec> = fc
  .record({ maxAttempts: fc.integer({ min: 1, max: 4 }), base: fc.integer({ min: 0, max: 40 }), factor: fc.integer({ min: 1, max: 8 }) })
  .map(({ maxAttempts, base, factor }) => ({ maxAttempts, base, max: base * factor }));

function scenarioArb(cfg: GenConfig, capacity: fc.Arbitrary<number>, maxPayloadBytes: number | undefined): fc.Arbitrary<Scenario> {
  return fc.record({
    policy: policyArb,
    capacity,
    maxPayloadBytes: fc.constant(maxPayloadBytes),
    ops: fc.array(opArbitrary(cfg), { minLength: 1, maxLength: 60, size: 'max' }),
  });
}

function assertScenarios(name: string, arb: fc.Arbitrary<Scenario>, numRuns: number, mustReach: readonly string[]): void {
  const seed = testSeed(`model: ${name}`);
  coverage = new Map();
  try {
    fc.assert(
      fc.property(arb, (s) => {
        runScenario(s);
      }),
      { seed, numRuns },
    );
  } catch (error) {
    throw new Error(`[model: ${name}] failed; replay with LEASEHOLD_SEED=${seed}\n${(error as Error).message}`, { cause: error });
  }
  console.log(`[model: ${name}] reached: ${[...coverage].sort().map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  const missed = mustReach.filter((what) => !coverage.has(what));
  expect(missed, `situations the ${numRuns} sequences never reached`).toEqual([]);
}

/** Situations every property must reach, or it proves little. */
const CORE = [
  'submit ok',
  'submit ERR_INVALID_ARGUMENT',
  'poll ok',
  'complete ok',
  'complete ERR_STALE_LEASE',
  'complete ERR_JOB_NOT_FOUND',
  'fail ok',
  'fail ERR_STALE_LEASE',
  'extend ok',
  'extend ERR_STALE_LEASE',
  'extend ERR_INVALID_ARGUMENT',
  'cancel ok',
  'cancel ERR_ILLEGAL_STATE',
  'cancel running',
  'retryDead ok',
  'retryDead ERR_ILLEGAL_STATE',
  'view ok',
  'view ERR_JOB_NOT_FOUND',
  'lease expired, retried',
  'lease expired, dead',
];

describe('the queue against its model, one thread', () => {
  it('agrees with the model after every step of random operation sequences', () => {
    assertScenarios('integer times', scenarioArb({ fractional: false, wide: false, churn: false }, fc.constant(256), undefined), 300, CORE);
  });

  it('agrees with the model when leases, clock moves and runAt have fractional milliseconds', () => {
    assertScenarios('fractional times', scenarioArb({ fractional: true, wide: false, churn: false }, fc.constant(256), undefined), 200, CORE);
  });

  it('agrees with the model with extreme priorities, runAt offsets and lease lengths', () => {
    assertScenarios('wide values', scenarioArb({ fractional: false, wide: true, churn: false }, fc.constant(256), undefined), 200, CORE);
  });

  it('evicts only finished jobs, oldest finished first, and refuses submit with QueueFullError when none is evictable', () => {
    assertScenarios(
      'small capacity',
      scenarioArb({ fractional: false, wide: false, churn: true }, fc.integer({ min: 1, max: 6 }), 16),
      300,
      ['submit ok', 'submit ERR_QUEUE_FULL', 'submit ERR_INVALID_ARGUMENT', 'eviction', 'eviction, oldest of several', 'complete ok', 'cancel ok', 'view ERR_JOB_NOT_FOUND'],
    );
  });
});
