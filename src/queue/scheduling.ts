import { planTicks, tickJobs } from '../schedule/plan.js';
import { byDueTick, viewOf, type ScheduleOptions, type ScheduleView } from '../schedule/spec.js';
import type { ScheduleStore } from '../schedule/store.js';
import type { NewJob } from '../validate/job-input.js';
import { checkSchedule, checkScheduleName } from '../validate/schedule.js';
import type { QueueContext } from './context.js';
import { MemorySchedules } from './memory-schedules.js';

/**
 * Repeatable jobs of one JobQueue instance: its schedules (in shared memory,
 * or in the journal) and the firing of their ticks. The store is made on
 * first use, so a queue without schedules pays nothing for them.
 */
export class Scheduling {
  readonly #ctx: QueueContext;
  readonly #submitMany: (jobs: readonly NewJob[]) => string[];
  #store: ScheduleStore | undefined;

  constructor(ctx: QueueContext, submitMany: (jobs: readonly NewJob[]) => string[]) {
    this.#ctx = ctx;
    this.#submitMany = submitMany;
  }

  get #schedules(): ScheduleStore {
    this.#ctx.assertOpen();
    const journal = this.#ctx.journal?.journal;
    return (this.#store ??= journal === undefined ? new MemorySchedules(this.#ctx) : journal.scheduleTable());
  }

  schedule(name: string, options: ScheduleOptions): ScheduleView {
    const store = this.#schedules;
    const schedule = checkSchedule(name, options, this.#ctx.now(), this.#ctx.options.maxPayloadBytes);
    store.put(schedule);
    return viewOf(schedule);
  }

  unschedule(name: string): boolean {
    const store = this.#schedules;
    checkScheduleName(name);
    return store.remove(name);
  }

  list(): ScheduleView[] {
    return this.#schedules.all().map(viewOf);
  }

  /**
   * Fires every due tick (see JobQueue#runSchedules): per schedule, submits
   * its ticks' jobs under their keys, then moves its next tick on by a
   * compare-and-set. Returns the jobs of the schedules this call moved on.
   */
  run(): string[] {
    const store = this.#schedules;
    const now = this.#ctx.now();
    const fired: string[] = [];
    for (const schedule of store.due(now).sort(byDueTick)) {
      const plan = planTicks(schedule, now);
      if (plan === undefined) continue;
      const ids = plan.ticks.length === 0 ? [] : this.#submitMany(tickJobs(schedule, plan.ticks));
      if (store.advance(schedule.name, schedule.nextTick!, plan.next)) fired.push(...ids);
    }
    return fired;
  }
}
