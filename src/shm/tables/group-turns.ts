import { TURNS_TAKEN, TURN_LEVELS, turnsOfGroup } from '../memory/layout.js';

/**
 * The fair turns of groups (`turns` in layout.ts): start-time fair queuing
 * over the ready jobs, per priority.
 *
 * Each ready job carries a turn number, given as it is filed ready: one past
 * the later of its group's last turn and the turn last served, of its turn
 * level (the ready level of its priority). The ready index serves the
 * lowest turn of the highest priority (ReadyIndex#file keys its rings and
 * heap by turn), so a group with k jobs waiting has them at turns
 * TURN + 1 … TURN + k, interleaved with every other group's: one job per
 * group per round, however many one group has. The ungrouped jobs take turns
 * as group 0. A job held back (a cap, a rate limit) keeps its turn and is
 * filed with it again (HeldJobs).
 *
 * Concurrency contract (I27 in src/shm/README.md): every method runs under
 * the maintenance lock; the polls need not. Jobs filed in turn order go into
 * the rings, which lock-free polls consume in that order; a job whose turn
 * is below its ring's tail goes to the overflow heap, whose OVERFLOW bit
 * sends every poll to the lock until it is claimed. The round served is
 * raised by the locked polls' claims (`served`) and, for the lock-free ones,
 * from the ring's shared head when a turn is given (ReadyIndex#spentTurn):
 * behind by at most the turns of HEAD_STEP entries and one per poll in
 * flight. A group cap or a rate limit sends every poll to the lock by its own
 * bit (CAPPED, RATE_LIMITED); the filing is the same either way, so setting
 * or clearing one refiles nothing. Once started, TURNS_TAKEN stays 1 for the
 * queue's life; a queue that never names a group never starts them and pays
 * nothing. The turns are a hint (I1), kept in the ready and held entries: a
 * rebuild reads them there before it clears the rings and heaps, and files
 * each job that stays ready with its turn again; the jobs that have none (due
 * only now) take their groups' next turns in (priority, runAt, submission)
 * order. The counters here are never reset: a turn given is never given
 * again.
 */
export class GroupTurns {
  readonly #turns: Float64Array;
  readonly #header: Float64Array;
  /**
   * The turn of the ready entry a locked poll is claiming now (0: none, or
   * turns not taken): a claim held back keeps it in its held entry. This
   * thread's, set and read within one lock hold.
   */
  offered = 0;

  constructor(turns: Float64Array, header: Float64Array) {
    this.#turns = turns;
    this.#header = header;
  }

  /** Whether groups take turns: ready jobs are filed by turn (see ReadyIndex#file). */
  get taken(): boolean {
    return this.#header[TURNS_TAKEN] === 1;
  }

  /**
   * Groups take turns from now on. The caller then files every ready job
   * again (a rebuild): those filed before are keyed by runAt, not by turn.
   */
  start(): void {
    this.#header[TURNS_TAKEN] = 1;
  }

  /** The turn of a job of `group` (0: ungrouped) filed ready now at turn level `level`: one past its group's last and the one served last. */
  next(group: number, level: number): number {
    const turns = this.#turns;
    const at = turnsOfGroup(group) + level;
    const turn = Math.max(turns[level]!, turns[at]!) + 1;
    turns[at] = turn;
    return turn;
  }

  /** A job of turn `turn` at turn level `level` was leased (or its ring's head has passed it): the round has come that far. */
  served(level: number, turn: number): void {
    if (turn > this.#turns[level]!) this.#turns[level] = turn;
  }
}

/** The turn level of a priority without a ready level of its own. */
export const SHARED_TURN_LEVEL = TURN_LEVELS - 1;
