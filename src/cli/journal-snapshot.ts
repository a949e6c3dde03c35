/**
 * A journal read as it is on disk, for a read-only dashboard: every call
 * opens the file read-only (through SQLite's WAL, so it works while another
 * process owns the journal) and changes nothing, not even what opening the
 * queue would (the requeue of leases its owner lost). It shows what the
 * owner last committed: a lease that has expired since is still RUNNING
 * here until the owner notices, as in `leasehold stats`.
 */
import { flowFields } from '../queue/flows.js';
import { IllegalStateError, InvalidArgumentError, JobNotFoundError, describe } from '../errors.js';
import type { DashboardQueue } from '../dashboard/queue.js';
import type { LoggedJob } from '../shm/core.js';
import { JobStatus, type JobPage, type JobQuery, type JobView, type QueueStats } from '../types.js';
import { parseJobId } from '../validate/job-id.js';
import { parsedHeaders } from '../validate/job-input.js';
import { parsedResult } from '../validate/outcome.js';
import { journalStats, readJournal } from './journal-commands.js';
import { jobIdOf } from '../job-id.js';

const DEFAULT_LIMIT = 100;

export class JournalSnapshot implements DashboardQueue {
  readonly #file: string;
  readonly #maxAttempts: number;

  /** `maxAttempts`: the app's policy's, shown for jobs without their own. */
  constructor(file: string, maxAttempts: number) {
    this.#file = file;
    this.#maxAttempts = maxAttempts;
  }

  stats(): QueueStats {
    return journalStats(this.#file);
  }

  isPaused(): boolean {
    return readJournal(this.#file, (journal) => journal.paused());
  }

  /** As `jobs()` of a queue: ascending job number, `next` the last number of the page. */
  jobs(query: JobQuery = {}): JobPage {
    const { status, type, limit = DEFAULT_LIMIT, after } = query;
    const from = after === undefined ? 0 : Number(after);
    if (!Number.isSafeInteger(from) || from < 0) throw new InvalidArgumentError(`Expected \`after\` to be a page's \`next\`, got ${describe(after)}`);
    const matching = readJournal(this.#file, (journal) => journal.rows())
      .filter((row) => row.num > from && (status === undefined || row.status === status) && (type === undefined || row.type === type));
    const page = matching.slice(0, limit);
    const last = page.at(-1);
    return { jobs: page.map((row) => this.#view(row)), next: matching.length > limit && last !== undefined ? String(last.num) : null };
  }

  view(jobId: string): JobView {
    const num = parseJobId(jobId);
    const row = readJournal(this.#file, (journal) => journal.rows()).find((candidate) => candidate.num === num);
    if (row === undefined) throw new JobNotFoundError(`No job with id ${jobId} in the journal ${this.#file}`);
    return this.#view(row);
  }

  submit(): never {
    return readOnly();
  }

  retryDead(): never {
    return readOnly();
  }

  cancel(): never {
    return readOnly();
  }

  promote(): never {
    return readOnly();
  }

  updatePayload(): never {
    return readOnly();
  }

  changeDelay(): never {
    return readOnly();
  }

  changePriority(): never {
    return readOnly();
  }

  pause(): never {
    return readOnly();
  }

  resume(): never {
    return readOnly();
  }

  #view(row: LoggedJob): JobView {
    return {
      id: jobIdOf(row.num),
      type: row.type,
      priority: row.priority,
      status: row.status,
      attempts: row.attempts,
      maxAttempts: row.maxAttempts === 0 ? this.#maxAttempts : row.maxAttempts,
      nextRunAt: row.runAt,
      lastError: row.lastError,
      payload: row.payload,
      leaseUntil: row.status === JobStatus.RUNNING ? row.leaseUntil : null,
      workerId: row.workerId,
      result: row.status === JobStatus.SUCCEEDED ? parsedResult(row.result) : undefined,
      key: row.key,
      timeoutMillis: row.timeout === 0 ? null : row.timeout,
      headers: parsedHeaders(row.headers),
      submittedAt: row.submittedAt,
      startedAt: row.startedAt,
      finishedAt: row.finishedAt,
      progress: row.progress ?? undefined,
      group: row.group ?? null,
      ...flowFields(row.parent, row.waiting, row.status),
    };
  }
}

function readOnly(): never {
  throw new IllegalStateError('The journal is open read-only: start the dashboard with --allow-writes (it then needs the journal to itself)');
}
