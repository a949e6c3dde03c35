import type { JobStatus } from '../types.js';

/** One job as a move log (the journal) records it. */
export interface LoggedJob {
  num: number;
  type: string;
  payload: string;
  priority: number;
  status: JobStatus;
  attempts: number;
  runAt: number;
  lastError: string | null;
  token: number;
  leaseUntil: number;
  finishSeq: number;
  workerId: string | null;
  /** The job's moves so far: a journal applies a write only over an older one. */
  moves: number;
}

/** What a state change can alter: everything but the job's identity and content. */
export type LoggedMove = Omit<LoggedJob, 'type' | 'payload' | 'priority'>;

/** Numbers that must never be issued twice, even across a crash. */
export interface Sequences {
  /** The last job number issued. */
  jobSeq: number;
  /** At least every token issued: tokens are reserved in blocks. */
  tokenSeq: number;
}

/**
 * Where the queue core reports every committed move, under the queue lock:
 * the journal. `submitted` runs before the new job is committed and returns
 * only once the job is durable, so a job exists in memory only once it is in
 * the log; `moved` may be grouped with later writes (`flush` forces them out).
 */
export interface MoveLog {
  submitted(job: LoggedJob): void;
  /** Durable before it returns, unless `durable` is false: then it rides along with the next commit. */
  moved(move: LoggedMove, durable: boolean): void;
  evicted(num: number): void;
  reserve(sequences: Sequences): void;
  /** Makes every write so far durable. */
  flush(): void;
}
