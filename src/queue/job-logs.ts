/**
 * The logs of a JobQueue's jobs (`log`, `logs`), kept in this instance's
 * memory: a job's lines are not in shared memory, nor in the journal. A
 * WorkerPool writes its handlers' lines through its main thread's queue
 * (the instance it was given), so that instance has them all; another
 * thread's attached instance sees only those logged through it.
 */
import type { JobLogs } from '../types.js';
import { cutLine, type LogLimits } from '../validate/logs.js';

interface JobLog {
  lines: string[];
  dropped: number;
}

export class LogStore {
  readonly #limits: LogLimits;
  /** Past this many jobs with a log, those whose jobs are gone (evicted, removed) are let go: twice the capacity, so a sweep's cost is spread over as many new logs. */
  readonly #sweepAt: number;
  readonly #byJob = new Map<number, JobLog>();

  constructor(limits: LogLimits, capacity: number) {
    this.#limits = limits;
    this.#sweepAt = 2 * capacity;
  }

  /** Appends `line` (cut to maxLogLineBytes) to job `jobNum`'s log, dropping its oldest line past maxLogLines; `exists` tells which jobs are still held, for a sweep. */
  append(jobNum: number, line: string, exists: (jobNum: number) => boolean): void {
    let log = this.#byJob.get(jobNum);
    if (log === undefined) {
      if (this.#byJob.size >= this.#sweepAt) this.#sweep(exists);
      log = { lines: [], dropped: 0 };
      this.#byJob.set(jobNum, log);
    }
    log.lines.push(cutLine(line, this.#limits.maxLogLineBytes));
    if (log.lines.length > this.#limits.maxLogLines) {
      log.lines.shift();
      log.dropped++;
    }
  }

  /** Job `jobNum`'s log: a copy (none yet: no lines). */
  read(jobNum: number): JobLogs {
    const log = this.#byJob.get(jobNum);
    return log === undefined ? { lines: [], dropped: 0 } : { lines: [...log.lines], dropped: log.dropped };
  }

  /** Lets go of the logs of jobs no longer held: their numbers are never issued again, so nothing else would. */
  #sweep(exists: (jobNum: number) => boolean): void {
    for (const jobNum of this.#byJob.keys()) if (!exists(jobNum)) this.#byJob.delete(jobNum);
  }
}
