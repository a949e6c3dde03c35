/**
 * One step of a candidate order: a recorded call (or one part of it) replayed
 * on the model, and what the queue recorded compared with what the model
 * returns at that point. Returns why they differ, or undefined if they agree.
 * Ids must be the model's (the next number). The queue chooses tokens, so a
 * lease's token is checked by a rule instead: `increasing` (greater than every
 * token issued before it in the order, which proves them unique and issued in
 * the order of the claims) or `unique` (never issued before in the order).
 */
import { isDeepStrictEqual, inspect } from 'node:util';
import { leaseMade, type Call, type CallArgs, type LeaseResult } from './history.js';
import { sameView, type ModelLease, type Outcome, type QueueModel } from './model.js';

/**
 * Which part of a call a step replays: all of it, or — in the relaxed mode,
 * where completeAndPoll's two halves may take effect at different moments —
 * its complete or its poll; or, in the relaxed mode too, the moment a
 * lease the call made (pinned by the checker since) is registered for expiry.
 */
export type Part = 'whole' | 'complete' | 'poll' | 'register' | 'skipId';

export type TokenRule = 'increasing' | 'unique';

/** Replays `part` of `call` on `model` (which it changes); a poll's lease is the model's best job. */
export function replay(model: QueueModel, call: Call, part: Part, tokens: TokenRule): string | undefined {
  const c = call.call;
  if (part === 'register') {
    model.unpin(leaseMade(call)!.jobId);
    return undefined;
  }
  if (part === 'complete' && c.op === 'completeAndPoll') {
    return compare(model.complete(c.jobId, c.token), { ok: true, value: undefined });
  }
  if (part === 'poll' && c.op === 'completeAndPoll') return acceptLease(model, model.poll(c.workerId, c.leaseMillis), call, tokens);
  switch (c.op) {
    case 'poll':
      return acceptLease(model, model.poll(c.workerId, c.leaseMillis), call, tokens);
    case 'completeAndPoll':
      return acceptLease(model, model.completeAndPoll(c.jobId, c.token, c.workerId, c.leaseMillis), call, tokens);
    case 'view': {
      const want = model.view(c.jobId);
      if (want.ok && call.result.ok) return sameView(call.result.value, want.value as Record<string, unknown>) ? undefined : `the model returns ${show(want.value)}`;
      return compare(want, call.result);
    }
    case 'stats':
      return compare({ ok: true, value: model.stats() }, call.result);
    case 'advance':
      model.advance(c.ms);
      return compare({ ok: true, value: undefined }, call.result);
    default:
      return compare(plainCall(model, c), call.result);
  }
}

/**
 * The relaxed mode's claim: `call` (a poll, or completeAndPoll's poll half)
 * leased the job it recorded, which must be ready at this point, though not
 * necessarily the best (the caller checks the better ones against the call's window).
 */
export function replayClaim(model: QueueModel, call: Call, tokens: TokenRule): string | undefined {
  const c = call.call;
  const lease = call.result.ok ? (call.result.value as LeaseResult | undefined) : undefined;
  if (lease === undefined || (c.op !== 'poll' && c.op !== 'completeAndPoll')) throw new Error('replayClaim needs a poll that returned a lease');
  const claimed = model.pollJob(lease.jobId, c.leaseMillis);
  if (claimed === undefined) return `${lease.jobId} is not a ready job here`;
  return checkLease(model, claimed, lease, tokens);
}

/**
 * A pending call placed at this point: whatever the model does there, and
 * its result is not compared (nobody saw it). The lease a poll makes keeps a
 * null token, which no complete or fail can match. In the relaxed mode a
 * poll may have claimed any ready job, so there is one model per ready job;
 * a submit may also have taken its id without making its job.
 */
export function replayPending(model: QueueModel, call: Call, relaxed: boolean): QueueModel[] {
  const c = call.call;
  if (c.op !== 'poll' && c.op !== 'completeAndPoll') {
    const next = model.clone();
    if (c.op === 'advance') next.advance(c.ms);
    else if (c.op !== 'view' && c.op !== 'stats') plainCall(next, c);
    // A submit killed after it took its id but before its job was made leaves the id used and no job.
    return c.op === 'submit' ? [next, replaySkippedId(model)] : [next];
  }
  const next = model.clone();
  const outcome = c.op === 'poll' ? next.poll(c.workerId, c.leaseMillis) : next.completeAndPoll(c.jobId, c.token, c.workerId, c.leaseMillis);
  if (!relaxed || !outcome.ok || outcome.value === undefined) return [next];
  // The relaxed mode: the claim may have taken any ready job, not only the best.
  const before = model.clone();
  if (c.op === 'completeAndPoll') before.complete(c.jobId, c.token);
  before.expire();
  return before.ready().map((job) => {
    const claimed = before.clone();
    claimed.pollJob(job.id, c.leaseMillis);
    return claimed;
  });
}

/** A job number taken and never used (by a submit killed, or taken for dead, between taking it and making its job). */
export function replaySkippedId(model: QueueModel): QueueModel {
  const skipped = model.clone();
  skipped.expire();
  skipped.skipId();
  return skipped;
}

function plainCall(model: QueueModel, c: Exclude<CallArgs, { op: 'poll' | 'completeAndPoll' | 'view' | 'stats' | 'advance' }>): Outcome {
  switch (c.op) {
    case 'submit':
      return model.submit(c.type, c.payload, c.priority, c.runAt);
    case 'complete':
      return model.complete(c.jobId, c.token);
    case 'fail':
      return model.fail(c.jobId, c.token, c.error);
    case 'extend':
      return model.extend(c.jobId, c.token, c.leaseMillis);
    case 'cancel':
      return model.cancel(c.jobId);
    case 'retryDead':
      return model.retryDead(c.jobId);
  }
}

/** A poll's recorded result against the model's: the same job, attempt and leaseUntil, and a fresh token. */
function acceptLease(model: QueueModel, want: Outcome, call: Call, tokens: TokenRule): string | undefined {
  const got = call.result;
  if (!want.ok || !got.ok || want.value === undefined || got.value === undefined) return compare(want, got);
  return checkLease(model, want.value as ModelLease, got.value as LeaseResult, tokens);
}

function checkLease(model: QueueModel, want: ModelLease, got: LeaseResult, tokens: TokenRule): string | undefined {
  const { token, ...rest } = got;
  if (!isDeepStrictEqual(rest, want)) return `the model leases ${show(want)}`;
  if (!Number.isFinite(token)) return `token ${token} is not a finite number`;
  if (model.issuedTokens.has(token)) return `token ${token} was issued before in this order`;
  if (tokens === 'increasing' && token <= model.maxToken) return `token ${token} is not above ${model.maxToken}, issued before it in this order`;
  model.acceptToken(want.jobId, token);
  return undefined;
}

function compare(want: Outcome, got: Call['result']): string | undefined {
  if (want.ok && got.ok && isDeepStrictEqual(want.value, got.value)) return undefined;
  if (!want.ok && !got.ok && want.code === got.code) return undefined;
  return `the model ${want.ok ? `returns ${show(want.value)}` : `throws ${want.code}`}`;
}

function show(value: unknown): string {
  return inspect(value, { breakLength: Infinity, depth: 4 });
}
