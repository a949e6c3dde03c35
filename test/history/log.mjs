// The call log of the history recorder: one row of ROW float64s per call, in a
// preallocated array (no allocation or postMessage per call). Plain ESM, so the
// thread entry (test/fixtures/history-thread.mjs) and the test (via
// ./recorder.ts) share one layout; types in ./log.d.mts.
//
// row: thread | op | inv | resp | arg × 4 | outcome | result × 9
// Strings travel as indexes into the tables below, payloads as the number they
// spell, so a row is numbers only; a value outside the tables decodes to
// UNRECOGNISED, which no model result equals.

export const OPS = ['submit', 'poll', 'complete', 'fail', 'extend', 'completeAndPoll', 'cancel', 'retryDead', 'view', 'stats', 'advance'];
export const CODES = ['ERR_INVALID_ARGUMENT', 'ERR_JOB_NOT_FOUND', 'ERR_ILLEGAL_STATE', 'ERR_STALE_LEASE', 'ERR_QUEUE_FULL'];
export const TYPES = ['email', 'resize', 'report'];
/** What `fail` is called with (index -1: no error, so the queue records "failed"). */
export const FAIL_ERRORS = ['boom', 'timeout'];
/** Every lastError a job of these histories can carry. */
const LAST_ERRORS = ['lease expired', 'failed', ...FAIL_ERRORS];
const STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'DEAD', 'CANCELLED'];
const STAT_FIELDS = ['pending', 'ready', 'delayed', 'running', 'succeeded', 'dead', 'cancelled'];
export const UNRECOGNISED = '<unrecognised>';

const F_THREAD = 0;
export const F_OP = 1;
export const F_INV = 2;
export const F_RESP = 3;
const F_ARG = 4;
const ARGS = 4;
const F_OUTCOME = F_ARG + ARGS;
const F_RESULT = F_OUTCOME + 1;
const RESULTS = 9;
export const ROW = F_RESULT + RESULTS;

/** Outcome word: 0 returned; 1 + i threw CODES[i]; -1 threw something else. */
const OK = 0;
const UNEXPECTED = -1;

const NONE = Number.NaN;

/** The n of "Jn", or -1. */
export function jobNumber(id) {
  const m = /^J([1-9][0-9]*)$/.exec(id);
  return m === null ? -1 : Number(m[1]);
}

const indexOr = (table, value, missing) => {
  const i = table.indexOf(value);
  return i < 0 ? missing : i;
};
const fromTable = (table, i) => (i === -1 ? null : (table[i] ?? UNRECOGNISED));
const payloadNumber = (payload) => (typeof payload === 'string' && String(Number(payload)) === payload ? Number(payload) : NONE);
const payloadText = (n) => (Number.isNaN(n) ? UNRECOGNISED : String(n));
const optional = (n) => (Number.isNaN(n) ? undefined : n);

/** Performs one encoded call (`args` as in a row) on `queue` / `clock`; returns what it returned. */
function perform(queue, clock, workerId, op, a) {
  switch (OPS[op]) {
    case 'submit':
      return Number.isNaN(a[2]) && Number.isNaN(a[3])
        ? queue.submit(TYPES[a[0]], String(a[1]))
        : queue.submit(TYPES[a[0]], String(a[1]), optional(a[2]), optional(a[3]));
    case 'poll':
      return queue.poll(workerId, a[0]);
    case 'complete':
      return queue.complete(`J${a[0]}`, a[1]);
    case 'fail':
      return a[2] === -1 ? queue.fail(`J${a[0]}`, a[1]) : queue.fail(`J${a[0]}`, a[1], FAIL_ERRORS[a[2]]);
    case 'extend':
      return queue.extend(`J${a[0]}`, a[1], a[2]);
    case 'completeAndPoll':
      return queue.completeAndPoll(`J${a[0]}`, a[1], workerId, a[2]);
    case 'cancel':
      return queue.cancel(`J${a[0]}`);
    case 'retryDead':
      return queue.retryDead(`J${a[0]}`);
    case 'view':
      return queue.view(`J${a[0]}`);
    case 'stats':
      return queue.stats();
    case 'advance':
      return clock.advance(a[0]);
  }
  throw new Error(`unknown op ${op}`);
}

function writeResult(log, at, op, value) {
  const r = at + F_RESULT;
  switch (OPS[op]) {
    case 'submit':
      log[r] = jobNumber(value);
      return;
    case 'poll':
    case 'completeAndPoll':
      log[r] = value === undefined ? 0 : 1;
      if (value === undefined) return;
      log[r + 1] = jobNumber(value.jobId);
      log[r + 2] = value.token;
      log[r + 3] = value.attempt;
      log[r + 4] = value.leaseUntil;
      log[r + 5] = indexOr(TYPES, value.type, -2);
      log[r + 6] = payloadNumber(value.payload);
      return;
    case 'extend':
      log[r] = value;
      return;
    case 'view':
      log[r] = indexOr(STATUSES, value.status, -2);
      log[r + 1] = value.attempts;
      log[r + 2] = value.nextRunAt;
      log[r + 3] = value.priority;
      log[r + 4] = value.lastError === null ? -1 : indexOr(LAST_ERRORS, value.lastError, -2);
      log[r + 5] = value.leaseUntil ?? NONE;
      log[r + 6] = payloadNumber(value.payload);
      log[r + 7] = indexOr(TYPES, value.type, -2);
      log[r + 8] = jobNumber(value.id);
      return;
    case 'stats':
      STAT_FIELDS.forEach((field, i) => (log[r + i] = value[field]));
      return;
  }
}

/**
 * Makes one call and logs it in row `row` of `log`: the stamps come from
 * `stamps[0]`, a counter every recording thread shares. Returns the call's
 * value, or undefined if it threw; a throw that is not a JobQueueError's is
 * also pushed to `unexpected` (its message cannot travel in the row).
 */
export function record(log, row, stamps, thread, queue, clock, op, args, unexpected) {
  const at = row * ROW;
  log[at + F_THREAD] = thread;
  log[at + F_OP] = op;
  for (let i = 0; i < ARGS; i++) log[at + F_ARG + i] = args[i] ?? NONE;
  log.fill(NONE, at + F_RESULT, at + ROW);
  let value;
  // The invocation stamp: taken after the arguments are ready, just before the call.
  log[at + F_INV] = Atomics.add(stamps, 0, 1);
  try {
    value = perform(queue, clock, `w${thread}`, op, log.subarray(at + F_ARG, at + F_ARG + ARGS));
    // The response stamp: taken as soon as the call returned, before anything else.
    log[at + F_RESP] = Atomics.add(stamps, 0, 1);
    log[at + F_OUTCOME] = OK;
  } catch (error) {
    // The response stamp of a call that threw: as soon as it threw.
    log[at + F_RESP] = Atomics.add(stamps, 0, 1);
    const code = CODES.indexOf(error?.code);
    log[at + F_OUTCOME] = code < 0 ? UNEXPECTED : code + 1;
    if (code < 0) unexpected.push({ row, message: String(error?.stack ?? error) });
    return undefined;
  }
  writeResult(log, at, op, value);
  return value;
}

function decodeArgs(op, a) {
  switch (op) {
    case 'submit': {
      const call = { op, type: TYPES[a[0]], payload: String(a[1]) };
      if (!Number.isNaN(a[2])) call.priority = a[2];
      if (!Number.isNaN(a[3])) call.runAt = a[3];
      return call;
    }
    case 'poll':
      return { op, workerId: '', leaseMillis: a[0] };
    case 'complete':
      return { op, jobId: `J${a[0]}`, token: a[1] };
    case 'fail':
      return a[2] === -1 ? { op, jobId: `J${a[0]}`, token: a[1] } : { op, jobId: `J${a[0]}`, token: a[1], error: FAIL_ERRORS[a[2]] };
    case 'extend':
      return { op, jobId: `J${a[0]}`, token: a[1], leaseMillis: a[2] };
    case 'completeAndPoll':
      return { op, jobId: `J${a[0]}`, token: a[1], workerId: '', leaseMillis: a[2] };
    case 'cancel':
    case 'retryDead':
    case 'view':
      return { op, jobId: `J${a[0]}` };
    case 'stats':
      return { op };
    case 'advance':
      return { op, ms: a[0] };
  }
  throw new Error(`unknown op ${op}`);
}

function decodeValue(op, r) {
  switch (op) {
    case 'submit':
      return `J${r[0]}`;
    case 'poll':
    case 'completeAndPoll':
      if (r[0] === 0) return undefined;
      return { jobId: `J${r[1]}`, token: r[2], type: fromTable(TYPES, r[5]), payload: payloadText(r[6]), attempt: r[3], leaseUntil: r[4] };
    case 'extend':
      return r[0];
    case 'view':
      return {
        id: `J${r[8]}`,
        type: fromTable(TYPES, r[7]),
        priority: r[3],
        status: fromTable(STATUSES, r[0]),
        attempts: r[1],
        nextRunAt: r[2],
        lastError: fromTable(LAST_ERRORS, r[4]),
        payload: payloadText(r[6]),
        leaseUntil: Number.isNaN(r[5]) ? null : r[5],
      };
    case 'stats':
      return Object.fromEntries(STAT_FIELDS.map((field, i) => [field, r[i]]));
    default:
      return undefined;
  }
}

/** The calls of `count` rows of `log` (see ./history.ts `Call`); `unexpected` adds the messages of foreign throws. */
export function decode(log, count, unexpected = []) {
  const calls = [];
  for (let row = 0; row < count; row++) {
    const at = row * ROW;
    const op = OPS[log[at + F_OP]];
    const thread = log[at + F_THREAD];
    const call = decodeArgs(op, log.subarray(at + F_ARG, at + F_ARG + ARGS));
    if ('workerId' in call) call.workerId = `w${thread}`;
    const outcome = log[at + F_OUTCOME];
    const r = log.subarray(at + F_RESULT, at + ROW);
    const result =
      outcome === OK
        ? { ok: true, value: decodeValue(op, r) }
        : outcome === UNEXPECTED
          ? { ok: false, code: 'UNEXPECTED', message: unexpected.find((u) => u.row === row)?.message }
          : { ok: false, code: CODES[outcome - 1] };
    calls.push({ thread, call, inv: log[at + F_INV], resp: log[at + F_RESP], result });
  }
  return calls;
}
