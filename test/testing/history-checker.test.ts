/**
 * The history checker itself (`leasehold/testing`, src/testing/checker.ts), on hand-written
 * histories: the ones it must reject (a job leased twice, a poll that skipped
 * a better job ready for its whole call, a stale token accepted, an id or a
 * token repeated, real-time order violated) and the legal overlaps it must
 * accept, in each mode; pending calls (a thread killed inside its call),
 * which may take effect or not; the order `relaxed-order` keeps and the one it
 * lets go (histories with groups); group caps, which no poll may lease past;
 * and the doubleLeases property. Stamps are written out: `[inv, resp]` per call.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory, doubleLeases, explainFailure, minimalFailingHistory, type Mode } from '../../dist/testing/index.js';
import type { Call, CallArgs, HistorySetup, LeaseResult } from '../../dist/testing/index.js';

const T = 1_000;
const SETUP: HistorySetup = { start: T, policy: { maxAttempts: 3, base: 0, max: 0 }, capacity: 64 };
const MODES: Mode[] = ['linearizable', 'relaxed-poll'];

function call(thread: number, [inv, resp]: [number, number], args: CallArgs, value?: unknown): Call {
  return { thread, inv, resp, call: args, result: { ok: true, value } };
}

function refused(thread: number, [inv, resp]: [number, number], args: CallArgs, code: 'ERR_STALE_LEASE' | 'ERR_ILLEGAL_STATE' | 'ERR_JOB_NOT_FOUND' | 'ERR_INVALID_ARGUMENT'): Call {
  return { thread, inv, resp, call: args, result: { ok: false, code } };
}

const submit = (payload: string, priority?: number): CallArgs =>
  priority === undefined ? { op: 'submit', type: 'email', payload } : { op: 'submit', type: 'email', payload, priority };
const poll = (leaseMillis = 100): CallArgs => ({ op: 'poll', workerId: 'w', leaseMillis });
const lease = (jobId: string, token: number, payload: string, attempt = 1, leaseUntil = T + 100): LeaseResult => ({
  jobId, token, type: 'email', payload, attempt, leaseUntil,
});
const complete = (jobId: string, token: number): CallArgs => ({ op: 'complete', jobId, token });
const fail = (jobId: string, token: number): CallArgs => ({ op: 'fail', jobId, token });
const extend = (jobId: string, token: number, leaseMillis: number): CallArgs => ({ op: 'extend', jobId, token, leaseMillis });
const stats = (): CallArgs => ({ op: 'stats' });
const counts = (c: Partial<Record<'pending' | 'ready' | 'delayed' | 'running' | 'succeeded' | 'dead' | 'cancelled', number>>) => ({
  pending: 0, ready: 0, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0, paused: false, ...c,
});

/** J1 (priority 0) and J2 (priority 5) submitted one after the other, before anything else. */
const twoJobs = (): Call[] => [call(9, [0, 1], submit('a'), 'J1'), call(9, [2, 3], submit('b', 5), 'J2')];

function expectVerdict(history: Call[], mode: Mode, ok: boolean): void {
  const verdict = checkHistory(history, SETUP, mode);
  expect(verdict.ok, ok ? explainFailure('expected to accept', history, SETUP, mode) : `expected ${mode} to reject it`).toBe(ok);
}

describe('the history checker rejects what no order explains', () => {
  for (const mode of MODES) {
    describe(mode, () => {
      it('rejects a lease that runs from a reading of the clock older than the call', () => {
        const history = [call(9, [0, 1], submit('a'), 'J1'), call(1, [2, 3], { op: 'advance', ms: 20 }), call(0, [4, 9], poll(), lease('J1', 1, 'a', 1, T + 100))];
        expectVerdict(history, mode, false);
      });

      it('rejects an extend whose new end runs from a reading of the clock older than the call', () => {
        const history = [
          call(9, [0, 1], submit('a'), 'J1'), call(0, [2, 3], poll(), lease('J1', 1, 'a')), call(1, [4, 5], { op: 'advance', ms: 20 }),
          call(0, [6, 9], extend('J1', 1, 50), T + 50),
        ];
        expectVerdict(history, mode, false);
      });

      it('rejects a job leased to two overlapping polls', () => {
        const history = [
          call(9, [0, 1], submit('a'), 'J1'),
          call(0, [2, 5], poll(), lease('J1', 1, 'a')),
          call(1, [3, 6], poll(), lease('J1', 2, 'a')),
        ];
        expectVerdict(history, mode, false);
      });

      it('rejects a poll that leased a worse job while a strictly better one was ready for its whole call', () => {
        expectVerdict([...twoJobs(), call(0, [4, 5], poll(), lease('J1', 1, 'a'))], mode, false);
      });

      it('rejects a poll that returned nothing while a job was ready for its whole call', () => {
        expectVerdict([...twoJobs(), call(0, [4, 5], poll(), undefined)], mode, false);
      });

      it('rejects a complete accepted with the token of a lease already completed', () => {
        const history = [
          ...twoJobs(),
          call(0, [4, 5], poll(), lease('J2', 1, 'b')),
          call(0, [6, 7], complete('J2', 1)),
          call(1, [8, 9], complete('J2', 1)),
        ];
        expectVerdict(history, mode, false);
      });

      it('rejects a complete accepted with the token of a lease that expired and was re-issued', () => {
        const history = [
          call(9, [0, 1], submit('a'), 'J1'),
          call(0, [2, 3], poll(10), lease('J1', 1, 'a', 1, T + 10)),
          call(0, [4, 5], { op: 'advance', ms: 10 }),
          call(1, [6, 7], poll(10), lease('J1', 2, 'a', 2, T + 20)),
          call(0, [8, 9], complete('J1', 1)),
        ];
        expectVerdict(history, mode, false);
      });

      it('rejects two submits that returned the same id', () => {
        expectVerdict([call(0, [0, 3], submit('a'), 'J1'), call(1, [1, 2], submit('b'), 'J1')], mode, false);
      });

      it('rejects two leases of different jobs under one token', () => {
        const history = [...twoJobs(), call(0, [4, 7], poll(), lease('J2', 1, 'b')), call(1, [5, 6], poll(), lease('J1', 1, 'a'))];
        expectVerdict(history, mode, false);
      });

      it('rejects ids handed out against real-time order: the later submit got the lower id', () => {
        expectVerdict([call(0, [0, 1], submit('a'), 'J2'), call(1, [2, 3], submit('b'), 'J1')], mode, false);
      });

      it('rejects a view that saw a completion before the complete began', () => {
        const history = [
          call(9, [0, 1], submit('a'), 'J1'),
          call(0, [2, 3], poll(), lease('J1', 1, 'a')),
          call(1, [4, 5], { op: 'view', jobId: 'J1' }, { id: 'J1', type: 'email', priority: 0, status: 'SUCCEEDED', attempts: 1, nextRunAt: T, lastError: null, payload: 'a', leaseUntil: null }),
          call(0, [6, 7], complete('J1', 1)),
        ];
        expectVerdict(history, mode, false);
      });

      it('rejects a poll that passed over a job whose lease ran out, once the call that made the lease had returned', () => {
        expectVerdict(leaseRunOutInFlight([44, 46]), mode, false);
      });

      it('rejects stats whose counts no state during the call had', () => {
        expectVerdict([...twoJobs(), call(0, [4, 5], stats(), counts({ pending: 3, ready: 3 }))], mode, false);
      });
    });
  }
});

/**
 * t0's poll runs from 2 to 90. Meanwhile t1 leases the better J1 and fails
 * it back (ready again at once), and only then is J2 submitted. t0 got J2: in
 * any order J2 exists only after J1 is ready again, so strictly it should
 * have been J1; but J1 was claimed at one moment of t0's call.
 */
function betterJobClaimedMidCall(): Call[] {
  return [
    call(9, [0, 1], submit('b', 5), 'J1'),
    call(0, [2, 90], poll(), lease('J2', 2, 'a')),
    call(1, [10, 20], poll(), lease('J1', 1, 'b')),
    call(1, [30, 40], fail('J1', 1)),
    call(2, [50, 60], submit('a'), 'J2'),
  ];
}

/** Two overlapping polls: the one that got the better job J2 holds the higher token. */
function claimsOutOfTokenOrder(): Call[] {
  return [...twoJobs(), call(0, [4, 7], poll(), lease('J1', 1, 'a')), call(1, [5, 6], poll(), lease('J2', 2, 'b'))];
}

/**
 * t0's completeAndPoll of J1 runs from 10 to 50 and leases J2. During it, t1
 * submits the better J3 and then sees J1 still RUNNING: the complete came
 * after J3 was there, so an atomic step would have leased J3; but the poll
 * half may have passed J3 by, J3 being not yet submitted at its start.
 */
function completeAndPollInTwoSteps(): Call[] {
  const running = { id: 'J1', type: 'email', priority: 0, status: 'RUNNING', attempts: 1, nextRunAt: T, lastError: null, payload: 'a', leaseUntil: T + 100 };
  return [
    call(9, [0, 1], submit('a'), 'J1'),
    call(9, [2, 3], submit('c'), 'J2'),
    call(0, [4, 5], poll(), lease('J1', 1, 'a')),
    call(0, [10, 50], { op: 'completeAndPoll', jobId: 'J1', token: 1, workerId: 'w', leaseMillis: 100 }, lease('J2', 2, 'c')),
    call(1, [12, 14], submit('b', 5), 'J3'),
    call(1, [20, 30], { op: 'view', jobId: 'J1' }, running),
  ];
}

/**
 * t0's poll leases J1 (the better job) for 10 ms and returns only at 40;
 * meanwhile t1 moves the clock 16 ms on, and then polls (from `t1Poll`):
 * J1's lease has run out. If t0's call was still in flight, t1 may have
 * passed J1 over for J2: the lease is registered for expiry only as the call
 * that made it ends. Afterwards J1 shows as expired at its leaseUntil.
 */
function leaseRunOutInFlight(t1Poll: [number, number]): Call[] {
  const expired = { id: 'J1', type: 'email', priority: 5, status: 'PENDING', attempts: 1, nextRunAt: T + 10, lastError: 'lease expired', payload: 'b', leaseUntil: null };
  return [
    call(9, [0, 1], submit('b', 5), 'J1'),
    call(9, [2, 3], submit('a'), 'J2'),
    call(0, [4, 40], poll(10), lease('J1', 1, 'b', 1, T + 10)),
    call(1, [10, 12], { op: 'advance', ms: 16 }),
    call(1, t1Poll, poll(10), lease('J2', 2, 'a', 1, T + 26)),
    call(1, [60, 61], { op: 'view', jobId: 'J1' }, expired),
  ];
}

/**
 * t0's poll reads the clock at T and claims J1 later: meanwhile t1 moves the clock by 20 and sees J1 still
 * pending. The lease ends at T + 100 + `before`: from a reading `before` ms past T.
 */
function leaseFromEarlierReading(before: number): Call[] {
  const pending = { id: 'J1', type: 'email', priority: 0, status: 'PENDING', attempts: 0, nextRunAt: T, lastError: null, payload: 'a', leaseUntil: null };
  return [
    call(9, [0, 1], submit('a'), 'J1'),
    call(0, [2, 9], poll(), lease('J1', 1, 'a', 1, T + 100 + before)),
    call(1, [3, 4], { op: 'advance', ms: 20 }),
    call(1, [5, 6], { op: 'view', jobId: 'J1' }, pending),
  ];
}

/**
 * t0's extend of J1 reads the clock at T and moves the lease later: meanwhile t1 moves the clock by 20 and sees
 * the old lease still on. The new end is T + 50 + `before`: from a reading `before` ms past T.
 */
function extendFromEarlierReading(before: number): Call[] {
  const running = { id: 'J1', type: 'email', priority: 0, status: 'RUNNING', attempts: 1, nextRunAt: T, lastError: null, payload: 'a', leaseUntil: T + 100 };
  return [
    call(9, [0, 1], submit('a'), 'J1'),
    call(0, [2, 3], poll(), lease('J1', 1, 'a')),
    call(0, [4, 11], extend('J1', 1, 50), T + 50 + before),
    call(1, [5, 6], { op: 'advance', ms: 20 }),
    call(1, [7, 8], { op: 'view', jobId: 'J1' }, running),
  ];
}

/** A stats() overlapping a poll: `pending` from before the poll, `running` from after it. */
function statsAcrossMoments(): Call[] {
  return [...twoJobs(), call(0, [4, 7], stats(), counts({ pending: 2, ready: 2, running: 1 })), call(1, [5, 6], poll(), lease('J2', 1, 'b'))];
}

describe('the history checker accepts legal overlaps', () => {
  for (const mode of MODES) {
    describe(mode, () => {
      it('accepts two overlapping polls that leased the two best jobs, best to the lower token', () => {
        expectVerdict([...twoJobs(), call(0, [4, 7], poll(), lease('J1', 2, 'a')), call(1, [5, 6], poll(), lease('J2', 1, 'b'))], mode, true);
      });

      it('accepts a poll that returned nothing while a submit overlapped it', () => {
        expectVerdict([call(0, [0, 3], poll(), undefined), call(1, [1, 2], submit('a'), 'J1')], mode, true);
      });

      it('accepts overlapping submits whose ids do not follow their invocation order', () => {
        expectVerdict([call(0, [0, 5], submit('a'), 'J2'), call(1, [1, 2], submit('b'), 'J1')], mode, true);
      });

      it('accepts a complete refused as stale or taken, whichever side of an overlapping clock move it fell', () => {
        const expiring = (result: 'ok' | 'stale'): Call[] => [
          call(9, [0, 1], submit('a'), 'J1'),
          call(0, [2, 3], poll(10), lease('J1', 1, 'a', 1, T + 10)),
          call(1, [4, 7], { op: 'advance', ms: 10 }),
          result === 'ok' ? call(0, [5, 6], complete('J1', 1)) : refused(0, [5, 6], complete('J1', 1), 'ERR_STALE_LEASE'),
        ];
        expectVerdict(expiring('ok'), mode, true);
        expectVerdict(expiring('stale'), mode, true);
      });

      it('accepts a completeAndPoll that leased the next best job', () => {
        const history = [
          ...twoJobs(),
          call(0, [4, 5], poll(), lease('J2', 1, 'b')),
          call(0, [6, 7], { op: 'completeAndPoll', jobId: 'J2', token: 1, workerId: 'w', leaseMillis: 100 }, lease('J1', 2, 'a')),
          call(1, [8, 9], stats(), counts({ running: 1, succeeded: 1 })),
        ];
        expectVerdict(history, mode, true);
      });
    });
  }
});

describe('what only the relaxed mode allows', () => {
  const cases = [
    { rule: 'a poll that leased a worse job while the better one was claimed at some moment of the call', history: betterJobClaimedMidCall },
    { rule: 'unique tokens that do not increase in the order of the claims', history: claimsOutOfTokenOrder },
    { rule: 'stats whose counts come from different moments of the call', history: statsAcrossMoments },
    { rule: "a completeAndPoll whose complete came late and whose poll passed over a job submitted during the call", history: completeAndPollInTwoSteps },
    { rule: 'a poll that passed over a job whose lease ran out while the call that made it was still in flight', history: () => leaseRunOutInFlight([14, 20]) },
    { rule: 'a lease that runs from the clock as the poll read it, before a clock move and a view of its job still pending', history: () => leaseFromEarlierReading(0) },
    { rule: 'an extend that runs from the clock as it read it, before a clock move and a view of the old lease', history: () => extendFromEarlierReading(0) },
  ];
  for (const { rule, history } of cases) {
    it(`rejects as linearizable, accepts as relaxed-poll: ${rule}`, () => {
      expectVerdict(history(), 'linearizable', false);
      expectVerdict(history(), 'relaxed-poll', true);
    });
  }
});

describe('relaxed-order: histories with groups', () => {
  const inGroup = (payload: string, group: string, more: { priority?: number; runAt?: number } = {}): CallArgs => ({ op: 'submit', type: 'email', payload, ...more, group });
  /** J1 of group `first`, then J2 of group `second` (priority `second2`), both ready; a poll leases J2 while J1 stays ready throughout. */
  const secondLeased = (first: string, second: string, more: { priority?: number; runAt?: number } = {}): Call[] => [
    call(9, [0, 1], inGroup('a', first, more), 'J1'),
    call(9, [2, 3], inGroup('b', second), 'J2'),
    call(0, [4, 5], poll(), lease('J2', 1, 'b')),
  ];

  it('accepts a job of another group of the same priority leased first, which relaxed-poll rejects', () => {
    expectVerdict(secondLeased('north', 'south'), 'relaxed-order', true);
    expectVerdict(secondLeased('north', 'south'), 'relaxed-poll', false);
  });

  it("rejects a group's later job leased while its earlier one, submitted ready, stayed ready", () => {
    expectVerdict(secondLeased('north', 'north'), 'relaxed-order', false);
  });

  it('accepts it when the earlier job was submitted with a runAt: filed when due, not in its line', () => {
    expectVerdict(secondLeased('north', 'north', { runAt: T }), 'relaxed-order', true);
  });

  it('rejects a job of a lower priority leased while one of a higher priority, of another group, stayed ready', () => {
    expectVerdict(secondLeased('north', 'south', { priority: 1 }), 'relaxed-order', false);
  });

  it('rejects a poll that returned nothing while a grouped job was ready', () => {
    const history = [call(9, [0, 1], inGroup('a', 'north'), 'J1'), call(0, [2, 3], poll(), undefined)];
    expectVerdict(history, 'relaxed-order', false);
  });

  it('rejects a job leased to two overlapping polls', () => {
    const history = [
      call(9, [0, 1], inGroup('a', 'north'), 'J1'),
      call(0, [2, 5], poll(), lease('J1', 1, 'a')),
      call(1, [3, 6], poll(), lease('J1', 2, 'a')),
    ];
    expectVerdict(history, 'relaxed-order', false);
  });
});

describe('group caps', () => {
  const ALL_MODES: Mode[] = [...MODES, 'relaxed-order'];
  const inGroup = (payload: string, group: string, priority?: number): CallArgs =>
    priority === undefined ? { op: 'submit', type: 'email', payload, group } : { op: 'submit', type: 'email', payload, priority, group };
  const cap = (group: string, max: number | null): CallArgs => ({ op: 'setGroupConcurrency', group, max });
  /** North capped at `max`, then J1 and J2 of north submitted, J1 leased: the history before the poll of J2. */
  const oneRunning = (max: number): Call[] => [
    call(9, [0, 1], cap('north', max), undefined),
    call(9, [2, 3], inGroup('a', 'north'), 'J1'),
    call(9, [4, 5], inGroup('b', 'north'), 'J2'),
    call(0, [6, 7], poll(), lease('J1', 1, 'a')),
  ];

  for (const mode of ALL_MODES) {
    describe(mode, () => {
      it('rejects a poll that leases past its group cap', () => {
        expectVerdict([...oneRunning(1), call(1, [8, 9], poll(), lease('J2', 2, 'b'))], mode, false);
      });

      it('rejects a lease after the cap was lowered to the jobs running: they keep running, later claims wait', () => {
        const history = [...oneRunning(2), call(2, [8, 9], cap('north', 1), undefined), call(1, [10, 11], poll(), lease('J2', 2, 'b'))];
        expectVerdict(history, mode, false);
      });

      it('accepts the lease that reaches the cap, and one after a place was given back', () => {
        expectVerdict([...oneRunning(2), call(1, [8, 9], poll(), lease('J2', 2, 'b'))], mode, true);
        expectVerdict([...oneRunning(1), call(0, [8, 9], complete('J1', 1)), call(1, [10, 11], poll(), lease('J2', 2, 'b'))], mode, true);
      });

      it('accepts a lease past a cap the poll may have come before, or that was removed', () => {
        expectVerdict([...oneRunning(1), call(2, [8, 11], cap('north', 2), undefined), call(1, [9, 10], poll(), lease('J2', 2, 'b'))], mode, true);
        expectVerdict([...oneRunning(1), call(2, [8, 9], cap('north', null), undefined), call(1, [10, 11], poll(), lease('J2', 2, 'b'))], mode, true);
      });

      it('counts an expired lease out of its group: its place is free once the clock has passed it', () => {
        const history = [...oneRunning(1), call(1, [8, 9], { op: 'advance', ms: 100 }), call(1, [10, 11], poll(), lease('J2', 2, 'b', 1, T + 200))];
        expectVerdict(history, mode, true);
      });

      it('accepts a poll that returns nothing while the only ready job is held back by its cap, and rejects it once the cap is gone', () => {
        expectVerdict([...oneRunning(1), call(1, [8, 9], poll(), undefined)], mode, true);
        expectVerdict([...oneRunning(1), call(2, [8, 9], cap('north', null), undefined), call(1, [10, 11], poll(), undefined)], mode, false);
      });

      it('lets a poll pass over a better job its group cap holds back', () => {
        const history = [...oneRunning(1).slice(0, 2), call(9, [4, 5], inGroup('b', 'north', 5), 'J2'), call(0, [6, 7], poll(), lease('J2', 1, 'b')), call(9, [8, 9], inGroup('c', 'south', 5), 'J3'), call(9, [10, 11], inGroup('d', 'north', 9), 'J4'), call(1, [12, 13], poll(), lease('J3', 2, 'c'))];
        expectVerdict(history, mode, true);
      });
    });
  }

  it('refuses a cap of 0, a fraction, or a blank group, as the queue does', () => {
    for (const args of [cap('north', 0), cap('north', 1.5), cap(' ', 1)]) {
      expectVerdict([refused(0, [0, 1], args, 'ERR_INVALID_ARGUMENT')], 'linearizable', true);
      expectVerdict([call(0, [0, 1], args, undefined)], 'linearizable', false);
    }
  });
});

describe('what the checker reports', () => {
  it('finds an order that puts every call after the calls that responded before it began', () => {
    const history = [...completeAndPollInTwoSteps().slice(0, 3), call(1, [6, 9], submit('d', 1), 'J3'), call(0, [7, 8], poll(), lease('J2', 2, 'c'))];
    const verdict = checkHistory(history, SETUP, 'linearizable');
    if (!verdict.ok) expect.fail(explainFailure('expected to accept', history, SETUP, 'linearizable'));
    const order = verdict.order.map((s) => s.call);
    expect(order).toHaveLength(history.length);
    for (const [i, c] of order.entries()) {
      expect(order.slice(i + 1).filter((later) => later.resp < c.inv), `calls placed after ${c.call.op} that responded before it began`).toEqual([]);
    }
    // The overlapping submit of the better J3 must come after the poll that did not lease it.
    expect(order.indexOf(history[4]!)).toBeLessThan(order.indexOf(history[3]!));
  });

  it('cuts a failing history to its shortest failing prefix, without the calls that changed nothing', () => {
    const history = [
      ...twoJobs(),
      call(1, [4, 5], stats(), counts({ pending: 2, ready: 2 })),
      call(0, [6, 7], poll(), lease('J1', 1, 'a')),
      call(1, [8, 9], poll(), lease('J2', 2, 'b')),
      call(1, [10, 11], complete('J2', 2)),
    ];
    expect(minimalFailingHistory(history, SETUP, 'linearizable')).toEqual([history[0], history[1], history[3]]);
  });

  it('names the call that fits nowhere and what the model expected there', () => {
    const message = explainFailure('seed 7', [...twoJobs(), call(0, [4, 5], poll(), lease('J1', 1, 'a'))], SETUP, 'linearizable');
    expect(message).toContain('seed 7: not linearizable');
    expect(message).toContain("poll('w', 100) -> J1 #1 attempt 1 until 1100: the model leases { jobId: 'J2'");
  });
});

/** A call that never returned: its thread was killed inside it. */
function pending(thread: number, inv: number, args: CallArgs): Call {
  return { thread, inv, resp: Number.POSITIVE_INFINITY, call: args, result: { ok: false, code: 'NO_RESPONSE' }, pending: true };
}

describe('pending calls (a thread killed inside its call)', () => {
  for (const mode of MODES) {
    describe(mode, () => {
      it('lets a pending submit make room in a full queue and take its id, and then make no job', () => {
        const small = { ...SETUP, capacity: 2 };
        const history = [
          call(9, [0, 1], submit('a'), 'J1'),
          call(9, [2, 3], poll(), lease('J1', 1, 'a')),
          call(9, [4, 5], complete('J1', 1)),
          call(9, [6, 7], submit('b'), 'J2'),
          pending(0, 8, submit('c')),
          refused(1, [9, 10], { op: 'view', jobId: 'J1' }, 'ERR_JOB_NOT_FOUND'),
          call(1, [11, 12], submit('d'), 'J4'),
        ];
        expect(checkHistory(history, small, mode).ok, explainFailure('expected to accept', history, small, mode)).toBe(true);
        // The room it made is the queue's only room: had it made its job, the queue would be full again.
        expect(checkHistory([...history, call(1, [13, 14], submit('e'), 'J5')], small, mode).ok).toBe(false);
      });

      it('lets a pending poll take its effect: a later lease of the job is its second attempt', () => {
        const history = [
          call(9, [0, 1], submit('a'), 'J1'),
          pending(0, 2, poll(10)),
          call(1, [3, 4], { op: 'advance', ms: 10 }),
          call(1, [5, 6], poll(10), lease('J1', 7, 'a', 2, T + 20)),
        ];
        expectVerdict(history, mode, true);
        expectVerdict(history.filter((c) => c.pending !== true), mode, false);
      });

      it('lets a pending call take no effect at all', () => {
        expectVerdict([call(9, [0, 1], submit('a'), 'J1'), pending(0, 2, poll()), call(1, [3, 4], poll(), lease('J1', 1, 'a'))], mode, true);
      });

      it('never lets the lease of a pending poll be completed: nobody holds its token', () => {
        const history = [
          call(9, [0, 1], submit('a'), 'J1'),
          pending(0, 2, poll()),
          call(1, [3, 4], complete('J1', 1)),
        ];
        expectVerdict(history, mode, false);
      });

      it('places a pending call only after it began', () => {
        // J1's second attempt before the pending poll was even invoked: nothing took the first.
        const history = [
          call(9, [0, 1], submit('a'), 'J1'),
          call(1, [2, 3], { op: 'advance', ms: 10 }),
          call(1, [4, 5], poll(10), lease('J1', 7, 'a', 2, T + 20)),
          pending(0, 6, poll(10)),
        ];
        expectVerdict(history, mode, false);
      });
    });
  }

  for (const mode of MODES) {
    it(`${mode}: lets a pending submit take its id without making its job`, () => {
      const history = [
        call(9, [0, 1], submit('a'), 'J1'),
        pending(1, 2, submit('b')),
        call(0, [3, 4], submit('c'), 'J3'),
        call(0, [5, 6], stats(), counts({ pending: 2, ready: 2 })),
        refused(0, [7, 8], { op: 'view', jobId: 'J2' }, 'ERR_JOB_NOT_FOUND'),
      ];
      expectVerdict(history, mode, true);
      expectVerdict(history.filter((c) => c.pending !== true), mode, false);
    });
  }

  for (const mode of MODES) {
    it(`${mode}: lets a submit presumed dead inside its call skip one id before its own, and no other call`, () => {
      // The stalled submit's number was J2; taken over, it went on and made its job as J3.
      const history = (marked: boolean) => [
        call(9, [0, 1], submit('a'), 'J1'),
        { ...call(1, [2, 7], submit('b'), 'J3'), ...(marked ? { presumedDead: true } : {}) },
        call(0, [3, 4], submit('c'), 'J4'),
        refused(0, [5, 6], { op: 'view', jobId: 'J2' }, 'ERR_JOB_NOT_FOUND'),
      ];
      expectVerdict(history(true), mode, true);
      expectVerdict(history(false), mode, false);
      // Skipped after its own job was made, the id would be J2's: no order gives it J3.
      expectVerdict([call(9, [0, 1], submit('a'), 'J1'), { ...call(1, [2, 3], submit('b'), 'J3'), presumedDead: true }, call(0, [4, 5], submit('c'), 'J2')], mode, false);
    });
  }

  it('lets a pending completeAndPoll complete its job and claim nothing in the relaxed mode only: killed between its two steps', () => {
    // t0 dies inside its completeAndPoll of J1: t1 then sees J1 SUCCEEDED and still leases J2, the only job the poll could take.
    const succeeded = { id: 'J1', type: 'email', priority: 5, status: 'SUCCEEDED', attempts: 1, nextRunAt: T, lastError: null, payload: 'b', leaseUntil: null };
    const history = [
      call(9, [0, 1], submit('b', 5), 'J1'),
      call(9, [2, 3], submit('a'), 'J2'),
      call(0, [4, 5], poll(), lease('J1', 1, 'b')),
      pending(0, 6, { op: 'completeAndPoll', jobId: 'J1', token: 1, workerId: 'w', leaseMillis: 100 }),
      call(1, [7, 8], { op: 'view', jobId: 'J1' }, succeeded),
      call(1, [9, 10], poll(), lease('J2', 2, 'a')),
    ];
    expectVerdict(history, 'relaxed-poll', true);
    expectVerdict(history, 'linearizable', false);
    // Its complete refused (a token nobody was given), it polls nothing either.
    expectVerdict(history.map((c) => (c.pending === true ? { ...c, call: { ...c.call, token: 9 } as CallArgs } : c)), 'relaxed-poll', false);
  });

  it('lets a pending poll claim a job that is not the best in the relaxed mode only', () => {
    // J2 (priority 5) is best; the pending poll took J1 (attempt 1), so J1's next lease is attempt 2.
    const history = [
      ...twoJobs(),
      pending(0, 4, poll(10)),
      call(1, [5, 6], { op: 'advance', ms: 10 }),
      call(1, [7, 8], poll(10), lease('J2', 8, 'b', 1, T + 20)),
      call(1, [9, 10], poll(10), lease('J1', 9, 'a', 2, T + 20)),
    ];
    expectVerdict(history, 'linearizable', false);
    expectVerdict(history, 'relaxed-poll', true);
  });

  it('keeps pending calls when it cuts a failing history down', () => {
    const history = [
      call(9, [0, 1], submit('a'), 'J1'),
      pending(0, 2, poll()),
      call(1, [3, 4], complete('J1', 1)),
    ];
    expect(minimalFailingHistory(history, SETUP, 'linearizable')).toContain(history[1]);
  });
});

describe('doubleLeases', () => {
  it('finds a job leased twice with one attempt, and a token handed out twice', () => {
    const leasedTwice = (token: number) => [call(9, [0, 1], submit('a'), 'J1'), call(0, [2, 3], poll(), lease('J1', 1, 'a')), call(1, [4, 5], poll(), lease('J1', token, 'a'))];
    expect(doubleLeases(leasedTwice(2))).toEqual([expect.stringContaining('J1 attempt 1 leased twice')]);
    expect(doubleLeases(leasedTwice(1))).toEqual([expect.stringContaining('token 1 handed out twice')]);
  });

  it('finds a token accepted after its job was leased again', () => {
    const history = [
      call(9, [0, 1], submit('a'), 'J1'),
      call(0, [2, 3], poll(10), lease('J1', 1, 'a', 1, T + 10)),
      call(1, [4, 5], { op: 'advance', ms: 10 }),
      call(1, [6, 7], poll(10), lease('J1', 2, 'a', 2, T + 20)),
      call(0, [8, 9], complete('J1', 1)),
    ];
    expect(doubleLeases(history)).toEqual([expect.stringContaining('accepted the token of')]);
  });

  it('accepts a job leased again at attempt 1 after a retryDead between', () => {
    const history = [
      call(9, [0, 1], submit('a'), 'J1'),
      call(0, [2, 3], poll(10), lease('J1', 1, 'a', 1, T + 10)),
      call(0, [4, 5], fail('J1', 1)),
      call(1, [6, 7], { op: 'retryDead', jobId: 'J1' }),
      call(1, [8, 9], poll(10), lease('J1', 2, 'a', 1, T + 20)),
    ];
    expect(doubleLeases(history)).toEqual([]);
    expect(doubleLeases(history.filter((c) => c.call.op !== 'retryDead'))).toEqual([expect.stringContaining('J1 attempt 1 leased twice')]);
  });

  it('accepts it also when the later lease comes from a call invoked first', () => {
    // A stalled poll [2..11] that leases J1 once the other thread's lease has failed and retryDead has run.
    const history = [
      call(9, [0, 1], submit('a'), 'J1'),
      call(0, [2, 11], poll(10), lease('J1', 2, 'a', 1, T + 20)),
      call(1, [3, 4], poll(10), lease('J1', 1, 'a', 1, T + 10)),
      call(1, [5, 6], fail('J1', 1)),
      call(1, [7, 8], { op: 'retryDead', jobId: 'J1' }),
    ];
    expect(doubleLeases(history)).toEqual([]);
    expect(doubleLeases(history.filter((c) => c.call.op !== 'retryDead'))).toEqual([expect.stringContaining('J1 attempt 1 leased twice')]);
  });
});
