// The seeded random calls one recording thread makes in a history, chosen from
// what this thread has seen so far (its own leases, old tokens, the highest job
// number it met), so that most calls name real jobs and current tokens and some
// name stale ones. Every call is logged by ./log.mjs `record`.
import { prng } from '../../dist/cli/random.js';
import { FAIL_ERRORS, OPS, TYPES, jobNumber, record } from './log.mjs';

const op = Object.fromEntries(OPS.map((name, i) => [name, i]));

/** Relative weights of the calls; those on a lease count only while the thread holds one. */
const WEIGHTS = [
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
];

/** The arguments of a submit, as a log row holds them (priority and runAt NaN: the defaults). */
export function submitArgs(random, now) {
  const priority = random() < 0.4 ? Number.NaN : Math.floor(random() * 3);
  const runAt = random() < 0.6 ? Number.NaN : now + Math.floor(random() * 41) - 10;
  return [Math.floor(random() * TYPES.length), Math.floor(random() * 1000), priority, runAt];
}

/**
 * Makes `calls` calls on `queue` as thread `thread`, logging the i-th in row
 * i of `log`; returns the number of rows written. `beforeCall(i)` runs before
 * the i-th call (the recorder's start line).
 */
export function recordThreadCalls({ queue, clock, log, stamps, thread, seed, calls, unexpected, beforeCall }) {
  const random = prng(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const held = [];
  const old = [];
  /** Jobs this thread failed: the ones that may be dead now. */
  const failed = [];
  let seen = 0;
  const leaseMillis = () => 5 + Math.floor(random() * 36);
  const anyJob = () => 1 + Math.floor(random() * (seen + 2));
  const learn = (id) => (seen = Math.max(seen, jobNumber(id)));
  const keep = (lease) => {
    if (lease === undefined) return;
    learn(lease.jobId);
    held.push({ job: jobNumber(lease.jobId), token: lease.token });
  };
  /** A lease to act on: mostly one held, sometimes an old one (a stale token), else a made-up one. */
  const target = () => {
    if (held.length > 0 && random() < 0.85) return held.splice(Math.floor(random() * held.length), 1)[0];
    if (old.length > 0 && random() < 0.8) return pick(old);
    return { job: anyJob(), token: Math.floor(random() * 50) };
  };

  for (let row = 0; row < calls; row++) {
    beforeCall(row);
    const choices = WEIGHTS.filter(([name]) => held.length > 0 || !['complete', 'fail', 'extend', 'completeAndPoll'].includes(name) || random() < 0.15);
    let r = random() * choices.reduce((sum, [, w]) => sum + w, 0);
    const name = choices.find(([, w]) => (r -= w) < 0)?.[0] ?? 'poll';
    const go = (args) => record(log, row, stamps, thread, queue, clock, op[name], args, unexpected);
    switch (name) {
      case 'submit': {
        const id = go(submitArgs(random, clock.now()));
        if (id !== undefined) learn(id);
        break;
      }
      case 'poll':
        keep(go([leaseMillis()]));
        break;
      case 'complete':
      case 'fail':
      case 'extend':
      case 'completeAndPoll': {
        const lease = target();
        const third = name === 'fail' ? Math.floor(random() * (FAIL_ERRORS.length + 1)) - 1 : leaseMillis();
        const value = go([lease.job, lease.token, third]);
        if (name === 'completeAndPoll') keep(value);
        if (name === 'fail') failed.push(lease.job);
        // An extended lease is still held; any other call ends this lease for the thread, whatever it returned.
        if (name === 'extend' && value !== undefined) held.push(lease);
        else old.push(lease);
        break;
      }
      case 'cancel':
        go([anyJob()]);
        break;
      case 'retryDead':
        go([failed.length > 0 && random() < 0.7 ? pick(failed) : anyJob()]);
        break;
      case 'view': {
        const view = go([anyJob()]);
        if (view !== undefined) learn(view.id);
        break;
      }
      case 'stats':
        go([]);
        break;
      case 'advance':
        go([1 + Math.floor(random() * 25)]);
        break;
    }
  }
  return calls;
}
