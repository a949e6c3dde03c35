import type { ScheduleStore } from '../schedule/store.js';
import { byName, type StoredSchedule } from '../schedule/spec.js';
import { ScheduleTable } from '../shm/core.js';
import type { QueueContext } from './context.js';

/**
 * An in-memory queue's schedules: the ScheduleTable in its shared memory,
 * read and written under the maintenance lock, so that every call is atomic
 * for every attached thread (`advance` is a compare-and-set there).
 */
export class MemorySchedules implements ScheduleStore {
  readonly #ctx: QueueContext;
  readonly #table: ScheduleTable;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
    this.#table = new ScheduleTable(ctx.memory.buffers.schedules);
  }

  put(schedule: StoredSchedule): void {
    this.#change((all) => [...all.filter((old) => old.name !== schedule.name), schedule].sort(byName));
  }

  remove(name: string): boolean {
    return this.#change((all) => all.filter((schedule) => schedule.name !== name));
  }

  all(): StoredSchedule[] {
    return this.#ctx.read(() => this.#table.read());
  }

  due(now: number): StoredSchedule[] {
    return this.all().filter((schedule) => schedule.nextTick !== null && schedule.nextTick <= now);
  }

  advance(name: string, from: number, to: number | null): boolean {
    return this.#change((all) => all.map((schedule) => (schedule.name === name && schedule.nextTick === from ? { ...schedule, nextTick: to } : schedule)));
  }

  /** Rewrites the table by `edit` under the lock; whether it changed. */
  #change(edit: (all: StoredSchedule[]) => StoredSchedule[]): boolean {
    return this.#ctx.locked(() => {
      const before = this.#table.read();
      const after = edit(before);
      const changed = after.length !== before.length || after.some((schedule, i) => schedule !== before[i]);
      if (changed) this.#table.write(after);
      return changed;
    });
  }
}
