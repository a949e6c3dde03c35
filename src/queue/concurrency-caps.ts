import { InvalidArgumentError } from '../errors.js';
import { GROUP_CAP_BASE, NAME_BYTES, QUEUE_CAP, TYPE_NAMES, groupCap, isGroupCap } from '../shm/core.js';
import { byType, type ConcurrencyCaps as Caps, type GroupConcurrencyCap } from '../types.js';
import type { ConcurrencyArgs, GroupConcurrencyArgs } from '../validate/concurrency.js';
import type { QueueContext } from './context.js';

/**
 * The concurrency caps of one JobQueue instance: the whole queue's, each
 * job type's and each group's. The caps and the RUNNING counts live in shared memory (see
 * concurrency.ts), so every attached thread obeys them; with a journal each
 * cap is also a meta row, so that it holds again after a reopen.
 */
export class ConcurrencyCaps {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** Sets or removes (null) a cap, under the lock. The journal is written first: if it refuses, nothing changed. */
  set({ type, max }: ConcurrencyArgs): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    ctx.locked((core, now) => {
      // A capped type needs its entry in the type table: a claim finds the cap by the job's TYPE column.
      const entry = type === undefined ? QUEUE_CAP : ctx.memory.typeNames.numberOf(type);
      if (entry === 0 && type !== undefined) {
        throw new InvalidArgumentError(
          `Expected \`type\` to be at most ${NAME_BYTES} UTF-8 bytes for a concurrency cap, and the queue to have fewer than ${TYPE_NAMES} types`,
        );
      }
      ctx.journal?.journal.setConcurrency(type, max);
      core.setConcurrency(entry, max ?? 0, now);
    });
    // Workers asleep in waitForWork look again: a raised or removed cap may let them claim.
    ctx.memory.signal.bump();
  }

  /**
   * Sets or removes (null) a group's cap, under the lock, the journal first
   * (if it refuses, nothing changed). A cap makes groups take turns, as a
   * submit naming a group does (see Maintenance#takeTurns).
   */
  setGroup({ group, max }: GroupConcurrencyArgs): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    ctx.locked((core, now) => {
      // The group's number first (a full group table refuses a new cap), the journal next: a refusal of either
      // changes nothing. A removal is refused by neither: a group the table has no room for has no cap to remove.
      const number = max === null ? ctx.memory.groupNames.numberOf(group) : core.groupNumber(group);
      ctx.journal?.journal.setGroupConcurrency(group, max);
      if (max !== null) core.takeTurns(now);
      if (number > 0) core.setConcurrency(groupCap(number), max ?? 0, now);
    });
    ctx.memory.signal.bump();
  }

  /** The groups' caps, by group name. */
  listGroups(): GroupConcurrencyCap[] {
    const ctx = this.#ctx;
    return ctx.read(() => {
      const groups: GroupConcurrencyCap[] = [];
      for (const { entry, max } of ctx.memory.concurrency.list()) {
        if (isGroupCap(entry)) groups.push({ group: ctx.memory.groupNames.nameOf(entry - GROUP_CAP_BASE)!, max });
      }
      return groups.sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
    });
  }

  /** The caps: the queue's, and the types' by type (see byType). */
  list(): Caps {
    const ctx = this.#ctx;
    return ctx.read(() => {
      let queue: number | null = null;
      const types: { type: string; max: number }[] = [];
      for (const { entry, max } of ctx.memory.concurrency.list()) {
        if (entry === QUEUE_CAP) queue = max;
        else if (!isGroupCap(entry)) types.push({ type: ctx.memory.typeNames.nameOf(entry)!, max });
      }
      return { queue, types: types.sort(byType) };
    });
  }
}
