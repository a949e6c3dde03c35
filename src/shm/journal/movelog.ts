import type { JobStatus, Payload } from '../../types.js';
import type { StoredResult } from '../../validate/outcome.js';

/** One job as a move log (the journal) records it. */
export interface LoggedJob {
  num: number;
  type: string;
  /** A string, or a Uint8Array for a binary payload (a BLOB in the journal). */
  payload: Payload;
  priority: number;
  /** The job's own maxAttempts (submit's option); 0: the policy's. */
  maxAttempts: number;
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
  /** A SUCCEEDED job's result as JSON text, or a binary result's bytes (a BLOB in the journal); null for none. */
  result: StoredResult | null;
  /** The idempotent key (submit's `key`), or null. */
  key: string | null;
  /** How long the key stays taken after the job finished (submit's `keyTtlMillis`); 0: not at all. */
  keyTtl: number;
  /** While SUCCEEDED, DEAD or CANCELLED: when it finished; null otherwise, or unknown. */
  finishedAt: number | null;
  /** When it was accepted; null: unknown (a job of a journal that did not keep it). Never changed after. */
  submittedAt: number | null;
  /** When its latest lease began; null: never leased, or unknown. */
  startedAt: number | null;
  /** The job's own lease length (submit's `timeoutMillis`); 0: the poll's. */
  timeout: number;
  /** The job's headers as JSON text (submit's, never changed after); null for none. */
  headers: string | null;
  /** The progress its latest lease reported; null: none. Written with the lease's other lazy moves (an extend's). */
  progress: number | null;
  /** The job's group (submit's `group`, never changed after); null for none. */
  group: string | null;
  /** A flow's child: its parent's job number, negative when the parent's onChildFailure is 'ignore'; 0: none. Never changed after. */
  parent: number;
  /** A flow's parent: its children not yet ended (it waits while > 0); 0: none. While DEAD, a flow's child's AWAITED (see layout.ts). */
  waiting: number;
}

/** What a state change can alter: everything but the job's identity and content. */
export type LoggedMove = Omit<LoggedJob, 'type' | 'payload' | 'priority' | 'maxAttempts' | 'key' | 'keyTtl' | 'timeout' | 'headers' | 'submittedAt' | 'group' | 'parent'>;

/** Numbers that must never be issued twice, even across a crash. */
export interface Sequences {
  /** The last job number issued. */
  jobSeq: number;
  /** At least every token issued: tokens are reserved in blocks. */
  tokenSeq: number;
}

/** What one group commit writes: each job once, as it is at the commit. */
export interface JournalWrites {
  /** New jobs, whole. */
  inserts: LoggedJob[];
  /** Jobs that moved: their state. */
  updates: LoggedMove[];
  /** Numbers of finished jobs evicted from memory. */
  evictions: number[];
}

/**
 * The journal, as the queue core sees it. The core notes changes in the
 * commit ring; a group commit hands them here in one batch.
 */
export interface MoveLog {
  /** Commits the writes in one transaction. */
  write(writes: JournalWrites): void;
  /** Commits the sequences now: tokens and job numbers up to them may be handed out. */
  reserve(sequences: Sequences): void;
}
