import { IllegalStateError, thrownText } from '../errors.js';
import { startTimer, type LongTimer } from '../long-timer.js';

/** `startScheduler(options)`: how often it fires due ticks, and where its failures go. */
export interface SchedulerOptions {
  /** Milliseconds between two runs of `runSchedules` (a tick fires at most this late). @default 1000 */
  intervalMillis?: number;
  /** Called with the error of a run that failed (the scheduler goes on). @default a process warning */
  onError?: (error: unknown) => void;
}

/** A running scheduler: `stop()` ends it, once its run in progress (if any) is over. */
export interface Scheduler {
  stop(): Promise<void>;
}

export const DEFAULT_SCHEDULER_INTERVAL_MILLIS = 1000;

/**
 * Calls `run` (a queue's runSchedules) now and then every `intervalMillis`
 * until stopped, one run at a time. Any number of schedulers, in any threads
 * and processes, may run on one queue: each tick still makes one job. A
 * closed queue (IllegalStateError) stops it.
 */
export function startScheduler(run: () => unknown, { intervalMillis, onError }: Required<SchedulerOptions>): Scheduler {
  let stopped = false;
  let timer: LongTimer | undefined;
  let wake: (() => void) | undefined;
  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        await run();
      } catch (error) {
        if (error instanceof IllegalStateError) break;
        onError(error);
      }
      if (stopped) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = startTimer(resolve, intervalMillis);
      });
    }
  };
  const running = loop();
  return {
    async stop() {
      stopped = true;
      timer?.clear();
      wake?.();
      await running;
    },
  };
}

/** The default onError: a warning, so that a scheduler that keeps failing is seen. */
export function warnOfSchedulerError(error: unknown): void {
  process.emitWarning(`leasehold scheduler: a run of runSchedules failed: ${thrownText(error)}`);
}
