/**
 * `leasehold stats FILE`, `dlq list FILE`, `dlq retry FILE ID|--all`: a
 * journal's counts and dead letters. Reading works while another process
 * owns the journal (read-only, through SQLite's WAL); retrying changes the
 * queue, so it needs the journal to itself. The read commands print a table,
 * or with `--json` one JSON document.
 */
import { existsSync } from 'node:fs';
import { IllegalStateError, JournalCorruptError } from '../errors.js';
import { Journal } from '../journal/journal.js';
import { JobQueue } from '../queue.js';
import { RetryPolicy } from '../policy.js';
import { payloadText } from '../payload-text.js';
import { systemClock } from '../clock.js';
import { JobStatus, type QueueStats } from '../types.js';
import { oneLine, table } from './table.js';
import { jobIdOf } from '../job-id.js';

export interface ReadOptions {
  json?: boolean;
}

/** One dead letter, as `dlq list --json` prints it. */
export interface DeadLetter {
  id: string;
  type: string;
  priority: number;
  attempts: number;
  lastError: string | null;
  /** The payload as text; a binary one by its length (see payloadText). */
  payload: string;
}

/** What `read` takes from the journal at `file`, opened read-only. */
export function readJournal<T>(file: string, read: (journal: Journal) => T): T {
  if (!existsSync(file)) throw new JournalCorruptError(`No journal at ${file}`);
  const journal = Journal.open(file, { synchronous: 'NORMAL', readonly: true });
  try {
    return read(journal);
  } finally {
    journal.close();
  }
}

/**
 * Jobs by status as the journal holds them, PENDING split into ready and
 * delayed by the clock now. RUNNING counts leases as last written: a lease
 * that expired since is still RUNNING here until its owner notices.
 */
export function journalStats(file: string, now = systemClock.now()): QueueStats {
  const { rows, paused } = readJournal(file, (journal) => ({ rows: journal.rows(), paused: journal.paused() }));
  const counts: QueueStats = { pending: 0, ready: 0, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0, paused };
  for (const row of rows) {
    if (row.status === JobStatus.PENDING) counts[row.runAt <= now ? 'ready' : 'delayed']++;
    counts[STAT_OF[row.status]]++;
  }
  return counts;
}

const STAT_OF = {
  PENDING: 'pending', RUNNING: 'running', SUCCEEDED: 'succeeded', DEAD: 'dead', CANCELLED: 'cancelled',
} as const satisfies Record<JobStatus, Exclude<keyof QueueStats, 'paused'>>;

export function printStats(file: string, options: ReadOptions): void {
  const s = journalStats(file);
  if (options.json === true) {
    console.log(JSON.stringify({ file, ...s }));
    return;
  }
  console.log(`Journal ${file}${s.paused ? ' (paused)' : ''}`);
  console.log(table([
    ['PENDING', String(s.pending)],
    ['  ready', String(s.ready)],
    ['  delayed', String(s.delayed)],
    ['RUNNING', String(s.running)],
    ['SUCCEEDED', String(s.succeeded)],
    ['DEAD', String(s.dead)],
    ['CANCELLED', String(s.cancelled)],
  ]));
}

export function deadLetters(file: string): DeadLetter[] {
  return readJournal(file, (journal) => journal.rows())
    .filter((row) => row.status === JobStatus.DEAD)
    .map((row) => ({ id: jobIdOf(row.num), type: row.type, priority: row.priority, attempts: row.attempts, lastError: row.lastError, payload: payloadText(row.payload) }));
}

export function printDeadLetters(file: string, options: ReadOptions): void {
  const dead = deadLetters(file);
  if (options.json === true) {
    console.log(JSON.stringify(dead));
    return;
  }
  console.log(`Dead letters in ${file}: ${dead.length}`);
  if (dead.length === 0) return;
  const rows = dead.map((job) => [job.id, oneLine(job.type, 40), String(job.attempts), oneLine(job.lastError ?? '')]);
  console.log(table([['id', 'type', 'attempts', 'last error'], ...rows]));
}

/** Puts dead jobs back to PENDING (all of them, or the named ones); returns their ids. */
export function retryDeadLetters(file: string, ids: readonly string[] | 'all'): string[] {
  if (!existsSync(file)) throw new JournalCorruptError(`No journal at ${file}`);
  // retryDead does not consult the policy; a queue opened for it retries nothing on its own.
  const queue = JobQueue.open(file, systemClock, new RetryPolicy(1, 0, 0));
  try {
    const chosen = ids === 'all' ? queue.deadLetters().map((view) => view.id) : ids;
    // All are checked before any is retried, so that a refusal leaves the journal as it was.
    for (const id of chosen) {
      const { status } = queue.view(id);
      if (status !== JobStatus.DEAD) throw new IllegalStateError(`Job ${id} is ${status}, not DEAD: nothing was retried`);
    }
    for (const id of chosen) queue.retryDead(id);
    return [...chosen];
  } finally {
    queue.close();
  }
}
