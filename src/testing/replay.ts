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
import type { ErrorCode } from '../errors.js';
import { leaseMade, type Call, type CallArgs, type LeaseResult } from './history.js';
import { checkPollArguments, sameView, type ModelLease, type Outcome, type QueueModel } from './model.js';

/**
 * Which part of a call a step replays: all of it, or — in the relaxed mode,
 * where completeAndPoll's two halves may take effect at different moments —
 * its complete or its poll; or, in the relaxed mode too, the moment a
 * lease the call made (pinned by the checker since) is registered for expiry.
 */
export type Part = 'whole' | 'complete' | 'poll' | 'register' | 'skipId';

export type TokenRule = 'increasing' | 'unique';

/**
 * What a recorded lease must satisfy besides the model's job and attempt:
 * its token's rule, and the clock its end runs from. Without
 * `earliestReading` the lease runs from the model's clock where the call
 * takes effect; with it (the relaxed mode) from any reading of the clock
 * between `earliestReading` (the clock when the call began, at the least)
 * and that point: a claim reads the clock before its CAS, and the clock may
 * move in between.
 */
export interface LeaseRule {
  tokens: TokenRule;
  earliestReading?: number;
}

/** Replays `part` of `call` on `model` (which it changes); a poll's lease is the model's best job. */
export function replay(model: QueueModel, call: Call, part: Part, rule: LeaseRule): string | undefined {
  const c = call.call;
  if (part === 'register') {
    model.unpin(leaseMade(call)!.jobId);
    return undefined;
  }
  if (part === 'complete' && c.op === 'completeAndPoll') {
    return compare(model.complete(c.jobId, c.token), { ok: true, value: undefined });
  }
  if (part === 'poll' && c.op === 'completeAndPoll') return acceptLease(model, model.poll(c.workerId, c.leaseMillis), call, rule);
  switch (c.op) {
    case 'poll':
      return acceptLease(model, model.poll(c.workerId, c.leaseMillis), call, rule);
    case 'completeAndPoll':
      return acceptLease(model, model.completeAndPoll(c.jobId, c.token, c.workerId, c.leaseMillis), call, rule);
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
    case 'reserveBytes':
    case 'releaseBytes':
      // They change no job (./in-place.ts); what they return is the bytes handed out, which the model has none of.
      return undefined;
    case 'submit':
      // A submit of a reservation reclaimed since (its thread taken for dead) is refused, having changed nothing (I30).
      if (!call.result.ok && call.result.code === RESERVATION_LOST) return undefined;
      return compare(plainCall(model, c), call.result);
    case 'extend':
      return replayExtend(model, c.jobId, c.token, c.leaseMillis, call.result, rule);
    default:
      return compare(plainCall(model, c), call.result);
  }
}

/**
 * The relaxed mode's claim: `call` (a poll, or completeAndPoll's poll half)
 * leased the job it recorded, which must be claimable at this point (ready,
 * its group below its cap), though not necessarily the best (the caller
 * checks the better ones against the call's window).
 */
export function replayClaim(model: QueueModel, call: Call, rule: LeaseRule): string | undefined {
  const c = call.call;
  const lease = call.result.ok ? (call.result.value as LeaseResult | undefined) : undefined;
  if (lease === undefined || (c.op !== 'poll' && c.op !== 'completeAndPoll')) throw new Error('replayClaim needs a poll that returned a lease');
  const claimed = model.pollJob(lease.jobId, c.leaseMillis);
  return typeof claimed === 'string' ? claimed : checkLease(model, claimed, lease, rule);
}

/**
 * A pending call placed at this point: whatever the model does there, and
 * its result is not compared (nobody saw it). The lease a poll makes keeps a
 * null token, which no complete or fail can match. In the relaxed mode a
 * poll may have claimed any ready job, so there is one model per ready job;
 * a submit may also have made room (evicted a finished job) and taken its id,
 * or either, without making its job. A pending
 * completeAndPoll in the relaxed mode comes in two parts, 'complete' and then
 * 'poll': its thread may have been killed between them.
 */
export function replayPending(model: QueueModel, call: Call, part: Part, relaxed: boolean): (QueueModel | string)[] {
  const c = call.call;
  if (c.op === 'completeAndPoll' && part === 'complete') {
    const completed = model.clone();
    // Refused poll arguments or a refused complete leave the model as it was, and the call throws before its poll: the same as leaving it out.
    const done = checkPollArguments(c.workerId, c.leaseMillis) === undefined && completed.complete(c.jobId, c.token).ok;
    return done ? [completed] : ['its complete is refused here, and then it polls nothing'];
  }
  if (c.op !== 'poll' && c.op !== 'completeAndPoll') {
    const next = model.clone();
    if (c.op === 'advance') next.advance(c.ms);
    else if (c.op !== 'view' && c.op !== 'stats' && c.op !== 'reserveBytes' && c.op !== 'releaseBytes') plainCall(next, c);
    return c.op === 'submit' ? [next, ...replayUnmadeSubmit(model)] : [next];
  }
  const next = model.clone();
  // completeAndPoll's poll step (relaxed; its complete placed before) polls as a poll does.
  const pollsOnly = c.op === 'poll' || part === 'poll';
  const outcome = pollsOnly ? next.poll(c.workerId, c.leaseMillis) : next.completeAndPoll(c.jobId, c.token, c.workerId, c.leaseMillis);
  if (!relaxed || !outcome.ok || outcome.value === undefined) return [next];
  // The relaxed mode: the claim may have taken any claimable job, not only the best.
  const before = model.clone();
  if (!pollsOnly) before.complete(c.jobId, c.token);
  before.expire();
  return before.claimable().map((job) => {
    const claimed = before.clone();
    claimed.pollJob(job.id, c.leaseMillis);
    return claimed;
  });
}

/**
 * What a submit killed before it made its job may have left: it makes room
 * (evicting the oldest finished job of a full queue), then takes its id; a
 * kill after either leaves it done and no job.
 */
function replayUnmadeSubmit(model: QueueModel): QueueModel[] {
  const unmade = [replaySkippedId(model)];
  const roomMade = model.clone();
  roomMade.expire();
  // Only a full queue evicts: otherwise the states are the ones above and the model's own.
  if (roomMade.held().length >= roomMade.capacity && roomMade.makeRoom()) unmade.push(roomMade, replaySkippedId(roomMade));
  return unmade;
}

/** A job number taken and never used (by a submit killed, or taken for dead, between taking it and making its job). */
export function replaySkippedId(model: QueueModel): QueueModel {
  const skipped = model.clone();
  skipped.expire();
  skipped.skipId();
  return skipped;
}

/** The code of a submit refused because its reservation was reclaimed (ReservationLostError). */
const RESERVATION_LOST: ErrorCode = 'ERR_RESERVATION_LOST';

function plainCall(model: QueueModel, c: Exclude<CallArgs, { op: 'poll' | 'completeAndPoll' | 'view' | 'stats' | 'advance' | 'reserveBytes' | 'releaseBytes' }>): Outcome {
  switch (c.op) {
    case 'submit':
      return model.submit(c.type, c.payload, c.priority, c.runAt, c.group);
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
    case 'release':
      return model.release(c.jobId, c.token, c.delayMillis);
    case 'remove':
      return model.remove(c.jobId);
    case 'changePriority':
      return model.changePriority(c.jobId, c.priority);
    case 'changeDelay':
      return model.changeDelay(c.jobId, c.delayMillis);
    case 'promote':
      return model.promote(c.jobId);
    case 'updatePayload':
      return model.updatePayload(c.jobId, c.payload);
    case 'setGroupConcurrency':
      return model.setGroupConcurrency(c.group, c.max);
  }
}

/** A poll's recorded result against the model's: the same job, attempt and leaseUntil, and a fresh token. */
function acceptLease(model: QueueModel, want: Outcome, call: Call, rule: LeaseRule): string | undefined {
  const got = call.result;
  if (!want.ok || !got.ok || want.value === undefined || got.value === undefined) return compare(want, got);
  return checkLease(model, want.value as ModelLease, got.value as LeaseResult, rule);
}

function checkLease(model: QueueModel, want: ModelLease, got: LeaseResult, rule: LeaseRule): string | undefined {
  const { token, leaseUntil, ...rest } = got;
  const { leaseUntil: fromNow, ...wanted } = want;
  if (!isDeepStrictEqual(rest, wanted) || !runsFromAReading(leaseUntil, fromNow, model.now, rule.earliestReading)) {
    const from = rule.earliestReading === undefined ? '' : ` (or until a reading from ${rule.earliestReading} on, plus ${fromNow - model.now} ms)`;
    return `the model leases ${show(want)}${from}`;
  }
  if (!Number.isFinite(token)) return `token ${token} is not a finite number`;
  if (model.issuedTokens.has(token)) return `token ${token} was issued before in this order`;
  if (rule.tokens === 'increasing' && token <= model.maxToken) return `token ${token} is not above ${model.maxToken}, issued before it in this order`;
  if (leaseUntil !== fromNow) model.endLeaseAt(want.jobId, leaseUntil);
  model.acceptToken(want.jobId, token);
  return undefined;
}

/**
 * An extend: as the model's, except that in the relaxed mode its new end may
 * run from any reading of the clock since the call began (`rule`), as a
 * claim's may: it reads the clock before its CAS, and the clock may move in
 * between.
 */
function replayExtend(model: QueueModel, jobId: string, token: number, leaseMillis: number, got: Call['result'], rule: LeaseRule): string | undefined {
  const want = model.extend(jobId, token, leaseMillis);
  if (want.ok && got.ok && runsFromAReading(got.value as number, want.value as number, model.now, rule.earliestReading)) {
    model.endLeaseAt(jobId, got.value as number);
    return undefined;
  }
  const from = rule.earliestReading === undefined || !want.ok ? '' : ` (or until a reading from ${rule.earliestReading} on, plus ${leaseMillis} ms)`;
  const refused = compare(want, got);
  return refused === undefined ? undefined : `${refused}${from}`;
}

/** Whether a lease that ends at `leaseUntil` ran from the clock now (`fromNow` is the end that gives), or from a reading of it since `earliest`. */
function runsFromAReading(leaseUntil: number, fromNow: number, now: number, earliest: number | undefined): boolean {
  if (leaseUntil === fromNow) return true;
  const reading = leaseUntil - (fromNow - now);
  return earliest !== undefined && reading >= earliest && reading < now;
}

function compare(want: Outcome, got: Call['result']): string | undefined {
  if (want.ok && got.ok && isDeepStrictEqual(want.value, got.value)) return undefined;
  if (!want.ok && !got.ok && want.code === got.code) return undefined;
  return `the model ${want.ok ? `returns ${show(want.value)}` : `throws ${want.code}`}`;
}

function show(value: unknown): string {
  return inspect(value, { breakLength: Infinity, depth: 4 });
}
