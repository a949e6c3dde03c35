/**
 * `leasehold stats FILE`, `dlq list FILE`, `dlq retry FILE ID|--all`: a
 * journal's counts and dead letters. Reading works while another process
 * owns the journal (read-only, through SQLite's WAL); retrying changes the
 * queue, so it needs the journal to itself.
 */
import { existsSync } from 'node:fs';
import { JournalCorruptError } from '../errors.js';
import { Journal } from '../journal/journal.js';
import { JobQueue } from '../queue.js';
import { RetryPolicy } from '../policy.js';
import { systemClock } from '../clock.js';
import { JobStatus } from '../types.js';

function readRows(file: string) {
  if (!existsSync(file)) throw new JournalCorruptError(`No journal at ${file}`);
  const journal = Journal.open(file, { synchronous: 'NORMAL', readonly: true });
  try {
    return journal.rows();
  } finally {
    journal.close();
  }
}

/** Jobs by status, as the journal holds them (RUNNING: leased when last written). */
export function journalStats(file: string): Record<JobStatus, number> {
  const counts = { PENDING: 0, RUNNING: 0, SUCCEEDED: 0, DEAD: 0, CANCELLED: 0 } satisfies Record<JobStatus, number>;
  for (const row of readRows(file)) counts[row.status]++;
  return counts;
}

export function printStats(file: string): void {
  const counts = journalStats(file);
  console.log(`Journal ${file}`);
  for (const [status, count] of Object.entries(counts)) console.log(`  ${status.padEnd(10)} ${String(count).padStart(8)}`);
}

export function printDeadLetters(file: string): void {
  const dead = readRows(file).filter((row) => row.status === JobStatus.DEAD);
  console.log(`Dead letters in ${file}: ${dead.length}`);
  if (dead.length === 0) return;
  console.table(dead.map((row) => ({ id: `J${row.num}`, type: row.type, attempts: row.attempts, 'last error': row.lastError ?? '' })));
}

/** Puts dead jobs back to PENDING (all of them, or the named ones); returns their ids. */
export function retryDeadLetters(file: string, ids: readonly string[] | 'all'): string[] {
  if (!existsSync(file)) throw new JournalCorruptError(`No journal at ${file}`);
  // retryDead does not consult the policy; a queue opened for it retries nothing on its own.
  const queue = JobQueue.open(file, systemClock, new RetryPolicy(1, 0, 0));
  try {
    const chosen = ids === 'all' ? queue.deadLetters().map((view) => view.id) : ids;
    for (const id of chosen) queue.retryDead(id);
    return [...chosen];
  } finally {
    queue.close();
  }
}
