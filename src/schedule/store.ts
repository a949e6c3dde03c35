import type { StoredSchedule } from './spec.js';

/**
 * Where a JobQueue keeps its schedules: shared memory (MemorySchedules) or
 * the journal (JournalSchedules). Each call is atomic for every thread of the
 * queue; `advance` is the compare-and-set that lets one scheduler of many
 * move a schedule past its ticks.
 */
export interface ScheduleStore {
  /** Adds the schedule, or replaces the one of its name. */
  put(schedule: StoredSchedule): void;
  /** Whether there was a schedule of that name (now removed). */
  remove(name: string): boolean;
  /** Every schedule, by name. */
  all(): StoredSchedule[];
  /** The schedules whose next tick is at or before `now` (in no set order: the caller sorts them, see byDueTick). */
  due(now: number): StoredSchedule[];
  /** Sets the schedule's next tick to `to` if it is still `from`; false (nothing changed) if another scheduler moved it, or it is gone. */
  advance(name: string, from: number, to: number | null): boolean;
}
