import {
  AWAITED, CANCELLED, DEAD, DELAYED, DIED_AT, ERROR_BYTES, ERROR_REF, FREE, JOB_SEQ, READY, RUNNING, WAITING_PARENTS, RUN_AT, SUCCEEDED, WAITING, isBusy, statusOf,
  type SlotStatus,
} from '../memory/layout.js';
import { noteFinish } from '../records.js';
import { MoveEvent, noteMove } from '../move-events.js';
import { NOT_MAPPED } from '../tables/jobmap.js';
import { jobIdOf } from '../../job-id.js';
import { LockLost } from '../protocol/lock-held.js';
import type { JobMoves } from './job-moves.js';

/**
 * Flows (submitFlow): a parent job waits, PENDING, until each of its children
 * has ended. The links live in the records: a child's PARENT names its
 * parent (negative: the parent's `onChildFailure` is 'ignore'), a parent's
 * WAITING counts its children not yet ended. While WAITING > 0 the parent is
 * DELAYED and filed nowhere (Filing#file, Rebuilder#rebuild), so no poll can
 * lease it and no catch-up promote it (I28).
 *
 * The moves here are the parent's, made by the lock holder right after the
 * move that ended a child (its complete, its fail or expiry to DEAD, its
 * cancel, its remove while PENDING), in the same lock hold, and so in the
 * same journal commit and undo log as the child's. A child has ended, for
 * its parent, once SUCCEEDED; DEAD or CANCELLED (or removed while PENDING)
 * ends it too under 'ignore', and under 'fail' makes the parent DEAD at once,
 * its lastError naming the child. A retryDead of a child whose parent still
 * waits counts it back in (+1), so no child is counted twice. A retryDead of
 * a parent waits again for its DEAD children under 'fail' too, and marks
 * each AWAITED (the move *await*): a rebuild then tells a child such a
 * parent waits for from one whose death its parent has yet to count.
 *
 * A complete is the one move that can end a child outside the lock, so every
 * complete takes the lock once a queue has a flow (ATTENTION's FLOWS, set
 * before the first child is placed): a queue without flows pays nothing.
 */
export class Flows {
  readonly #moves: JobMoves;

  constructor(moves: JobMoves) {
    this.#moves = moves;
  }

  /**
   * After the move that left the child in `slot` `status` (SUCCEEDED, DEAD,
   * CANCELLED; FREE: removed while PENDING), under the lock: its parent, if
   * it waits, counts it (keeps I28). Goes up the tree while a parent it
   * fails is itself a child. One plain read of ATTENTION for a queue without flows.
   */
  childEnded(slot: number, status: SlotStatus, now: number): void {
    if (!this.#moves.memory.flows) return;
    try {
      this.#countEnd(slot, status, now);
    } catch (error) {
      // A holder taken for dead since its last look: the child's move is decided and its call must report it
      // (thrown on, the call would start again and be refused by its own move, relies on I13). The parent then
      // waits one child too many, never too few (see I28).
      if (!(error instanceof LockLost)) throw error;
    }
  }

  #countEnd(slot: number, status: SlotStatus, now: number): void {
    const { slots } = this.#moves.memory;
    for (;;) {
      const link = slots.parents[slot]!;
      if (link === 0) return;
      const parent = this.#waitingParent(Math.abs(link));
      if (parent < 0) return;
      const word = slots.word(parent);
      if (status === SUCCEEDED || link < 0) {
        this.#countDown(parent, word, now);
        return;
      }
      const childId = jobIdOf(slots.jobNums[slot]!);
      const reason = status === DEAD ? `child ${childId} is DEAD` : status === CANCELLED ? `child ${childId} was cancelled` : `child ${childId} was removed`;
      if (!this.#failParent(parent, word, reason, now)) return;
      // The parent is DEAD now: its own parent counts that as its child's death.
      slot = parent;
      status = DEAD;
    }
  }

  /** Before a retryDead of the child in `slot` (DEAD): if its parent still waits (it counted the child's death, 'ignore'), it counts the child in again (keeps I28). */
  childRetried(slot: number): void {
    if (!this.#moves.memory.flows) return;
    const { slots } = this.#moves.memory;
    const link = slots.parents[slot]!;
    // Under 'fail' a waiting parent never counted a child's death (it would have died of it): it counts the
    // child as not ended already (see awaitChildren), and goes on doing so.
    const parent = link >= 0 ? -1 : this.#waitingParent(-link);
    if (parent < 0) return;
    const moves = this.#moves;
    const draft = moves.mover.start(parent);
    draft[WAITING]!++;
    moves.moveTo(parent, slots.word(parent), DELAYED, DELAYED);
  }

  /**
   * The direct children of job `parentNum` still in memory: their slots, in
   * submission order. A flow is placed depth first in one lock hold, so a
   * parent's descendants are numbered right after it: the scan goes up from
   * `parentNum + 1` and stops at the first job in memory that is not one (its
   * line of parents reaches a number below `parentNum`, or none). O(the
   * subtree, and the numbers of jobs gone since), under the lock. A job
   * evicted or removed, or a number a holder taken for dead left unused, is
   * passed over; so is a job whose line of parents is broken by an evicted
   * one (which cannot be told from a descendant): the scan goes on past it.
   */
  childrenOf(parentNum: number): number[] {
    const { slots, header } = this.#moves.memory;
    const children: number[] = [];
    for (let num = parentNum + 1, last = header[JOB_SEQ]!; num <= last; num++) {
      const slot = this.#slotOf(num);
      if (slot < 0) continue;
      let up = Math.abs(slots.parents[slot]!);
      const direct = up === parentNum;
      while (up > parentNum) {
        const above = this.#slotOf(up);
        up = above < 0 ? NOT_IN_MEMORY : Math.abs(slots.parents[above]!);
      }
      if (up === NOT_IN_MEMORY) continue;
      if (up !== parentNum) break;
      if (direct) children.push(slot);
    }
    return children;
  }

  /**
   * For a retryDead of the job in `slot` (DEAD): how many of its children a
   * parent waits for again: those PENDING or RUNNING, and under 'fail' those
   * DEAD too (retry them, and it runs once they succeeded), each marked
   * AWAITED first (`#await`), so that a rebuild counts it as not ended
   * rather than as a death the parent has yet to count (keeps I28).
   * SUCCEEDED and CANCELLED children, and children no longer in memory, have
   * ended. 0 for a job without children, or a queue without flows. Made
   * before the parent's move: a holder that dies in between leaves marks that
   * ask nothing of a parent still DEAD (only a waiting parent reads them).
   */
  awaitChildren(slot: number): number {
    const { memory } = this.#moves;
    if (!memory.flows) return 0;
    const { slots } = memory;
    let waiting = 0;
    for (const child of this.childrenOf(slots.jobNums[slot]!)) {
      const link = slots.parents[child]!;
      if (deathUncounted(slots.word(child), link, slots.waitings[child]!)) this.#await(child);
      if (notEnded(slots.word(child), link, slots.waitings[child]!)) waiting++;
    }
    return waiting;
  }

  /**
   * For a retryDead of the job in `slot` (DEAD): a child `awaitChildren`
   * would mark that is frozen by another call's commit in flight (I21),
   * whose undo would find the mark's word in place of its own; else -1.
   */
  frozenChild(slot: number): number {
    const { memory, notes } = this.#moves;
    if (!memory.flows) return -1;
    const { slots } = memory;
    for (const child of this.childrenOf(slots.jobNums[slot]!)) {
      if (deathUncounted(slots.word(child), slots.parents[child]!, slots.waitings[child]!) && notes.frozen(child)) return child;
    }
    return -1;
  }

  /** The slot of job `num` if it is in memory (not evicted or removed); else -1. */
  #slotOf(num: number): number {
    const { jobMap, slots } = this.#moves.memory;
    const slot = jobMap.get(num);
    if (slot === NOT_MAPPED || slots.jobNums[slot] !== num) return -1;
    const word = slots.word(slot);
    return isBusy(word) || statusOf(word) !== FREE ? slot : -1;
  }

  /**
   * Before a cancel or remove of the job in `slot` (its word `word`): whether it is a parent that waits,
   * so that the move, once made, counts it out of WAITING_PARENTS (`leftWaiting`).
   */
  waits(slot: number, word: number): boolean {
    return statusOf(word) === DELAYED && this.#moves.memory.slots.waitings[slot]! > 0;
  }

  /** After a cancel or remove of a parent that waited (see `waits`): one parent fewer waits. */
  leftWaiting(): void {
    this.#moves.memory.header[WAITING_PARENTS]!--;
  }

  /** The slot of job `num` if it is a parent that waits (DELAYED with WAITING > 0); else -1. */
  #waitingParent(num: number): number {
    const { jobMap, slots } = this.#moves.memory;
    const slot = jobMap.get(num);
    if (slot === NOT_MAPPED || slots.jobNums[slot] !== num) return -1;
    // Only the lock holder moves a DELAYED job, and we hold the lock: the word is settled.
    const word = slots.word(slot);
    return !isBusy(word) && statusOf(word) === DELAYED && slots.waitings[slot]! > 0 ? slot : -1;
  }

  /**
   * The move *count down* (lock holder): a waiting parent (DELAYED) has one
   * child fewer to wait for; at none it is DELAYED → READY (or DELAYED, its
   * own runAt still ahead), filed from then on like any pending job. A
   * runAt already past is read again from the clock (as retryDead's), so a
   * lock-free claim of a later reading never comes before it (relies on I2).
   */
  #countDown(parent: number, word: number, now: number): void {
    const moves = this.#moves;
    const draft = moves.mover.start(parent);
    const left = draft[WAITING]! - 1;
    draft[WAITING] = left;
    let to: SlotStatus = DELAYED;
    if (left === 0 && draft[RUN_AT]! <= now) {
      draft[RUN_AT] = moves.freshRunAt(now, 0, Infinity);
      to = READY;
    }
    if (moves.moveTo(parent, word, to, DELAYED) && left === 0) moves.memory.header[WAITING_PARENTS]!--;
  }

  /** The move *await* (lock holder): a DEAD child under 'fail' → DEAD, AWAITED, as a parent retried from the dead letters counts it in (see awaitChildren). */
  #await(child: number): void {
    const moves = this.#moves;
    moves.mover.start(child)[AWAITED] = 1;
    // Under the lock nothing else moves a DEAD job.
    moves.moveTo(child, moves.memory.slots.word(child), DEAD, DEAD);
  }

  /**
   * The move *fail parent* (lock holder): a waiting parent (DELAYED, its word
   * `word`) → DEAD, its lastError `reason`, as a permanent failure at `now`.
   * False if the parent moved meanwhile (see below): then it was counted up
   * the tree too.
   */
  #failParent(parent: number, word: number, reason: string, now: number): boolean {
    const moves = this.#moves;
    const { memory } = moves;
    // Stored before the draft is read: making room may evict, and eviction moves use the mover.
    const errorRef = moves.room.storeError(reason);
    // Making room may settle the queue, whose catch-up (a sibling's lease expired to DEAD) or rebuild (a death it
    // found uncounted) may have dead-lettered the parent already: its record, lastError chain included, is that move's.
    if (memory.slots.word(parent) !== word) {
      moves.room.freeCounted(errorRef);
      return false;
    }
    const draft = moves.mover.start(parent);
    const oldError = draft[ERROR_REF]!;
    draft[ERROR_REF] = errorRef;
    draft[ERROR_BYTES] = errorRef > 0 ? Buffer.byteLength(reason) : 0;
    draft[WAITING] = 0;
    noteFinish(draft, now);
    draft[DIED_AT] = now;
    // A finish (see protocol/finishes.ts): counted before the move, announced after it.
    memory.finishes.count();
    if (moves.moveTo(parent, word, DEAD, DELAYED)) memory.header[WAITING_PARENTS]!--;
    noteMove(memory, MoveEvent.Dead, draft, NaN);
    memory.finishes.announce();
    moves.room.freeCounted(oldError);
    return true;
  }
}

/** What the scan of childrenOf reads for a parent no longer in memory (no job number is negative). */
const NOT_IN_MEMORY = -1;

/**
 * Whether a child in memory, its word `word`, its PARENT column `link` and its AWAITED column `awaited`,
 * has not ended for its parent: PENDING, RUNNING or mid-move (BUSY: a lock-free claim or complete in
 * flight, of a child not ended before it), or DEAD under 'fail' and AWAITED (a parent retried from the
 * dead letters waits for such a child to be retried and succeed). SUCCEEDED and CANCELLED children have
 * ended, and DEAD ones under 'ignore'; a DEAD one under 'fail' not AWAITED ends its parent's wait by
 * dead-lettering it (`deathUncounted`).
 */
export function notEnded(word: number, link: number, awaited: number): boolean {
  if (isBusy(word)) return true;
  const status = statusOf(word);
  return status === READY || status === DELAYED || status === RUNNING || (status === DEAD && link > 0 && awaited > 0);
}

/**
 * Whether a child in memory (read as for `notEnded`) is DEAD under 'fail' and not AWAITED: its death is
 * its parent's to count, so a parent that still waits for it had its dead-lettering lost with a lock
 * holder (I28).
 */
export function deathUncounted(word: number, link: number, awaited: number): boolean {
  return !isBusy(word) && statusOf(word) === DEAD && link > 0 && awaited === 0;
}

/** A parent's job number as its child's PARENT column holds it (keeps the policy in the sign). */
export function parentLink(parentNum: number, ignoreFailures: boolean): number {
  return ignoreFailures ? -parentNum : parentNum;
}
