import { closeSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { InvalidArgumentError, JournalBusyError, JournalCorruptError, JournalIOError, JournalWriteError } from '../errors.js';
import { type JournalWrites, type LoggedJob, type LoggedMove, MAX_ATTEMPTS, MAX_KEY_BYTES, MAX_LEASE_LENGTH, type MoveLog, type Sequences } from '../shm/core.js';
import { MAX_GROUP_BYTES } from '../validate/job-input.js';
import { JobStatus, type RateLimit, type TypeRateLimit, type TypeRetryPolicy } from '../types.js';
import { JITTERS, RetryPolicy } from '../policy.js';
import { guarded, journalFailure } from './failures.js';
import { MIGRATIONS } from './migrations.js';
import { JournalSchedules } from './schedules.js';
import { sqliteDatabase } from '../optional.js';

/** `synchronous` NORMAL survives a crash of the process; FULL also a loss of power. */
export type Synchronous = 'NORMAL' | 'FULL';

/** The meta rows of a type's rate limit: these prefixes, then the type (see `setRateLimit`). */
const RATE_LIMIT_MAX = 'rate_limit.max:';
const RATE_LIMIT_WINDOW = 'rate_limit.window:';
/** The meta rows of a type's retry policy: one per field, each this prefix, the field, ':' and the type (see `setRetryPolicy`). */
const RETRY_POLICY = 'retry_policy.';
const RETRY_POLICY_FIELDS = ['max_attempts', 'base_backoff', 'max_backoff', 'jitter'] as const;
const retryPolicyKey = (field: (typeof RETRY_POLICY_FIELDS)[number], type: string): string => `${RETRY_POLICY}${field}:${type}`;
/** The meta rows of the concurrency caps: the queue's, and each type's as this prefix and the type (see `setConcurrency`). */
const CONCURRENCY_QUEUE = 'concurrency.queue';
const CONCURRENCY_TYPE = 'concurrency.type:';
/** The meta rows of the groups' concurrency caps: this prefix and the group (see `setGroupConcurrency`). */
const CONCURRENCY_GROUP = 'concurrency.group:';
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * The SQLite journal of one queue, through one connection. Each thread of
 * the owning process opens its own; the queue's group commit decides which
 * thread writes when (see CommitRing). A write is one transaction (WAL: a
 * commit is an append, fsync'd only with synchronous FULL). Two writers can
 * reach the file out of order (a leader presumed dead that was only slow), so
 * each row carries the job's move count and never overwrites a newer one.
 *
 * Every method that touches SQLite turns its failures into leasehold errors
 * (see `journalFailure`): a caller never sees a raw SqliteError.
 */
export class Journal implements MoveLog {
  readonly #db: Database.Database;
  readonly #path: string;
  readonly #insert: Database.Statement;
  readonly #update: Database.Statement;
  readonly #delete: Database.Statement;
  readonly #setMeta: Database.Statement;
  readonly #raiseMeta: Database.Statement;
  readonly #writeAll: (writes: JournalWrites) => void;

  private constructor(db: Database.Database, path: string) {
    this.#db = db;
    this.#path = path;
    // An edit of a pending job's priority or payload is written as an insert (see JournalNotes#noteOwnMove): a conflict takes them too.
    this.#insert = db.prepare(
      `INSERT INTO jobs (num, type, payload, priority, status, attempts, run_at, last_error, token, lease_until, finish_seq, worker_id, moves, max_attempts,
       result, idem_key, key_ttl, finished_at, timeout_millis, headers, submitted_at, started_at, progress, group_name, flow_parent, waiting_children)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (num) DO UPDATE SET status = excluded.status, attempts = excluded.attempts, run_at = excluded.run_at,
       last_error = excluded.last_error, token = excluded.token, lease_until = excluded.lease_until,
       finish_seq = excluded.finish_seq, worker_id = excluded.worker_id, moves = excluded.moves, result = excluded.result,
       finished_at = excluded.finished_at, started_at = excluded.started_at, progress = excluded.progress,
       waiting_children = excluded.waiting_children, payload = excluded.payload, priority = excluded.priority
       WHERE excluded.moves > jobs.moves`,
    );
    this.#update = db.prepare(
      `UPDATE jobs SET status = ?, attempts = ?, run_at = ?, last_error = ?, token = ?, lease_until = ?, finish_seq = ?, worker_id = ?, moves = ?,
       result = ?, finished_at = ?, started_at = ?, progress = ?, waiting_children = ? WHERE num = ? AND moves < ?`,
    );
    this.#delete = db.prepare('DELETE FROM jobs WHERE num = ?');
    this.#setMeta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    this.#raiseMeta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)');
    this.#writeAll = db.transaction((writes: JournalWrites) => {
      for (const job of writes.inserts) this.#insertJob(job);
      for (const move of writes.updates) this.#updateJob(move);
      if (writes.evictions.length === 0) return;
      for (const num of writes.evictions) this.#delete.run(num);
      // The numbers of the newest jobs must outlive their rows, so that ids continue after them.
      this.#raiseMeta.run('job_seq', Math.max(...writes.evictions));
    });
  }

  /**
   * Opens the journal at `path`, creating it if there is none. A file that is
   * not a leasehold journal, or is damaged, is refused with
   * JournalCorruptError and never written to.
   */
  static open(path: string, options: { synchronous: Synchronous; readonly?: boolean }): Journal {
    const readonly = options.readonly ?? false;
    checkHeader(path);
    const Database = sqliteDatabase();
    let db: Database.Database;
    try {
      db = new Database(path, { readonly, fileMustExist: readonly });
    } catch (error) {
      throw openFailure(error, path, `Cannot open the journal ${path}`);
    }
    try {
      db.pragma('busy_timeout = 10000');
      // Only reads, in one snapshot, until the file is known to be a journal (or empty): a foreign file is never written.
      const version = whenFree(() => db.transaction(() => check(db, path))());
      if (!readonly) {
        whenFree(() => db.pragma('journal_mode = WAL'));
        // Under SQLite's write lock, so that processes opening a new file at once migrate it once.
        whenFree(() => db.transaction(() => migrate(db, path)).immediate());
      } else {
        // Schema 0 passed the check only with no tables at all: an empty database, which a writer's open makes a journal.
        if (version === 0) throw new JournalCorruptError(`${path} holds no journal yet (an empty database; opening it for writing creates one)`);
        if (version < MIGRATIONS.length) throw new JournalCorruptError(`${path} needs a schema migration: open it for writing first`);
      }
      db.pragma(`synchronous = ${options.synchronous}`);
      return new Journal(db, path);
    } catch (error) {
      db.close();
      if (error instanceof JournalCorruptError) throw error;
      throw openFailure(error, path, `The journal ${path} is damaged`);
    }
  }

  /** Commits the writes in one transaction: all of them, or (throwing JournalWriteError) none. */
  write(writes: JournalWrites): void {
    const { inserts, updates, evictions } = writes;
    const count = inserts.length + updates.length + evictions.length;
    if (count === 0) return;
    guarded(this.#path, 'write to', () => {
      // One row alone commits by itself: an explicit transaction would only add two statements.
      if (count === 1 && evictions.length === 0) {
        if (inserts.length === 1) this.#insertJob(inserts[0]!);
        else this.#updateJob(updates[0]!);
        return;
      }
      this.#writeAll(writes);
    });
  }

  // Bound by position, in the statements' order: binding by name looks each of 20 names up, on every row.
  #insertJob(job: LoggedJob): void {
    this.#insert.run(
      job.num, job.type, sqlValue(job.payload), job.priority, job.status, job.attempts, job.runAt, job.lastError, job.token, job.leaseUntil,
      job.finishSeq, job.workerId, job.moves, job.maxAttempts, sqlValue(job.result), job.key, job.keyTtl, job.finishedAt, job.timeout, job.headers,
      job.submittedAt, job.startedAt, job.progress, job.group, job.parent, job.waiting,
    );
  }

  #updateJob(move: LoggedMove): void {
    this.#update.run(
      move.status, move.attempts, move.runAt, move.lastError, move.token, move.leaseUntil, move.finishSeq, move.workerId, move.moves,
      sqlValue(move.result), move.finishedAt, move.startedAt, move.progress, move.waiting, move.num, move.moves,
    );
  }

  reserve(sequences: Sequences): void {
    guarded(this.#path, 'reserve tokens in', () =>
      this.#db.transaction(() => {
        this.#raiseMeta.run('job_seq', sequences.jobSeq);
        this.#raiseMeta.run('token_seq', sequences.tokenSeq);
      })(),
    );
  }

  /**
   * Makes this process the journal's owner, under SQLite's write lock, so
   * that of processes opening it at once exactly one wins. An owner that is
   * no longer alive (it was killed) is replaced. Threads of the owning
   * process share its ownership and do not claim. A journal this thread
   * gave up while its disk refused the release (see `release`) is this
   * thread's to take again, with nothing to write.
   */
  claim(path: string): void {
    const key = journalKey(path);
    guarded(path, 'claim', () =>
      this.#db
        .transaction(() => {
          const holder = (this.#db.prepare("SELECT value FROM meta WHERE key = 'owner_pid'").get() as { value: number } | undefined)?.value;
          if (holder === process.pid && releasedHere.has(key)) return;
          if (holder !== undefined && isAlive(holder)) {
            throw new JournalBusyError(`The journal ${path} is owned by process ${holder}${holder === process.pid ? ' (this one)' : ''}`);
          }
          this.#setMeta.run('owner_pid', process.pid);
        })
        .immediate(),
    );
    releasedHere.delete(key);
  }

  /**
   * Gives the journal up, if this process owns it. Never fails: when the
   * journal cannot be written (a full disk), the owner row stays, naming
   * this process, and this thread remembers that it let go, so that its next
   * `claim` takes the journal again; another process finds this one dead
   * once it exits. (Another thread of this process would still see it owned.)
   */
  release(): void {
    if (!this.#db.open) return;
    try {
      this.#db.prepare("DELETE FROM meta WHERE key = 'owner_pid' AND value = ?").run(process.pid);
    } catch (error) {
      if (!(journalFailure(error, this.#path, 'release') instanceof JournalWriteError)) throw error;
      releasedHere.add(journalKey(this.#path));
    }
  }

  /** The queue's schedules, through this connection (see JournalSchedules). */
  scheduleTable(): JournalSchedules {
    return guarded(this.#path, 'read', () => new JournalSchedules(this.#db, this.#path));
  }

  /** Records whether the queue is paused (see JobQueue#pause), committed at once. */
  setPaused(paused: boolean): void {
    guarded(this.#path, 'write to', () => this.#setMeta.run('paused', paused ? 1 : 0));
  }

  /** Whether the queue was paused when last written. */
  paused(): boolean {
    return guarded(this.#path, 'read', () =>
      (this.#db.prepare("SELECT value FROM meta WHERE key = 'paused'").get() as { value: number } | undefined)?.value === 1);
  }

  /**
   * Records a job type's rate limit (see JobQueue#setRateLimit), or its
   * removal (null), committed at once: two meta rows per type, written in
   * one transaction.
   */
  setRateLimit(type: string, limit: RateLimit | null): void {
    guarded(this.#path, 'write to', () => this.#db.transaction(() => {
      if (limit === null) {
        this.#db.prepare('DELETE FROM meta WHERE key IN (?, ?)').run(RATE_LIMIT_MAX + type, RATE_LIMIT_WINDOW + type);
        return;
      }
      this.#setMeta.run(RATE_LIMIT_MAX + type, limit.max);
      this.#setMeta.run(RATE_LIMIT_WINDOW + type, limit.windowMillis);
    })());
  }

  /** The rate limits last written, in no particular order. */
  rateLimits(): TypeRateLimit[] {
    const rows = guarded(this.#path, 'read', () =>
      this.#db.prepare("SELECT key, value FROM meta WHERE key >= 'rate_limit.' AND key < 'rate_limit/'").all() as { key: string; value: number }[]);
    const values = new Map(rows.map(({ key, value }) => [key, value]));
    const limits: TypeRateLimit[] = [];
    for (const [key, max] of values) {
      if (!key.startsWith(RATE_LIMIT_MAX)) continue;
      const type = key.slice(RATE_LIMIT_MAX.length);
      const windowMillis = values.get(RATE_LIMIT_WINDOW + type);
      if (windowMillis !== undefined) limits.push({ type, max, windowMillis });
    }
    return limits;
  }

  /**
   * Records a concurrency cap (see JobQueue#setConcurrency): the whole
   * queue's (`type` undefined) or a type's, or its removal (null); one meta
   * row, committed at once.
   */
  setConcurrency(type: string | undefined, max: number | null): void {
    const key = type === undefined ? CONCURRENCY_QUEUE : CONCURRENCY_TYPE + type;
    guarded(this.#path, 'write to', () => {
      if (max === null) this.#db.prepare('DELETE FROM meta WHERE key = ?').run(key);
      else this.#setMeta.run(key, max);
    });
  }

  /** The concurrency caps last written: the queue's (null: none) and the types', in no particular order. */
  concurrencyCaps(): { queue: number | null; types: { type: string; max: number }[] } {
    const rows = guarded(this.#path, 'read', () =>
      this.#db.prepare("SELECT key, value FROM meta WHERE key >= 'concurrency.' AND key < 'concurrency/'").all() as { key: string; value: number }[]);
    let queue: number | null = null;
    const types: { type: string; max: number }[] = [];
    for (const { key, value } of rows) {
      if (key === CONCURRENCY_QUEUE) queue = value;
      else if (key.startsWith(CONCURRENCY_TYPE)) types.push({ type: key.slice(CONCURRENCY_TYPE.length), max: value });
    }
    return { queue, types };
  }

  /** Records a group's concurrency cap (see JobQueue#setGroupConcurrency), or its removal (null); one meta row, committed at once. */
  setGroupConcurrency(group: string, max: number | null): void {
    guarded(this.#path, 'write to', () => {
      if (max === null) this.#db.prepare('DELETE FROM meta WHERE key = ?').run(CONCURRENCY_GROUP + group);
      else this.#setMeta.run(CONCURRENCY_GROUP + group, max);
    });
  }

  /** The groups' concurrency caps last written, in no particular order. */
  groupConcurrencyCaps(): { group: string; max: number }[] {
    const rows = guarded(this.#path, 'read', () =>
      this.#db.prepare("SELECT key, value FROM meta WHERE key >= 'concurrency.group:' AND key < 'concurrency.group;'").all() as { key: string; value: number }[]);
    return rows.map(({ key, value }) => ({ group: key.slice(CONCURRENCY_GROUP.length), max: value }));
  }

  /**
   * Records a job type's own retry policy (see JobQueue#setRetryPolicy), or
   * its removal (null), committed at once: four meta rows per type, written
   * in one transaction (the jitter as its index in JITTERS).
   */
  setRetryPolicy(type: string, policy: RetryPolicy | null): void {
    guarded(this.#path, 'write to', () => this.#db.transaction(() => {
      if (policy === null) {
        const remove = this.#db.prepare('DELETE FROM meta WHERE key = ?');
        for (const field of RETRY_POLICY_FIELDS) remove.run(retryPolicyKey(field, type));
        return;
      }
      this.#setMeta.run(retryPolicyKey('max_attempts', type), policy.maxAttempts);
      this.#setMeta.run(retryPolicyKey('base_backoff', type), policy.baseBackoffMillis);
      this.#setMeta.run(retryPolicyKey('max_backoff', type), policy.maxBackoffMillis);
      this.#setMeta.run(retryPolicyKey('jitter', type), JITTERS.indexOf(policy.jitter));
    })());
  }

  /** The types' retry policies last written, in no particular order; a damaged one is JournalCorruptError. */
  retryPolicies(): TypeRetryPolicy[] {
    const rows = guarded(this.#path, 'read', () =>
      this.#db.prepare("SELECT key, value FROM meta WHERE key >= 'retry_policy.' AND key < 'retry_policy/'").all() as { key: string; value: number }[]);
    const values = new Map(rows.map(({ key, value }) => [key, value]));
    const policies: TypeRetryPolicy[] = [];
    const first = `${RETRY_POLICY}max_attempts:`;
    for (const [key, maxAttempts] of values) {
      if (!key.startsWith(first)) continue;
      const type = key.slice(first.length);
      const base = values.get(retryPolicyKey('base_backoff', type));
      const max = values.get(retryPolicyKey('max_backoff', type));
      const jitter = JITTERS[values.get(retryPolicyKey('jitter', type)) ?? -1];
      const damaged = (cause?: unknown) => new JournalCorruptError(`The journal ${this.#db.name} has a damaged retry policy of type ${JSON.stringify(type)}`, { cause });
      // An unknown jitter would pass for the default ('none') below.
      if (jitter === undefined) throw damaged();
      try {
        policies.push({ type, policy: new RetryPolicy(maxAttempts, base!, max!, { jitter }) });
      } catch (cause) {
        throw damaged(cause);
      }
    }
    return policies;
  }

  sequences(): Sequences {
    return guarded(this.#path, 'read', () => this.#sequences());
  }

  #sequences(): Sequences {
    const meta = new Map<string, number>();
    for (const { key, value } of this.#db.prepare('SELECT key, value FROM meta').all() as { key: string; value: number }[]) {
      meta.set(key, value);
    }
    const maxNum = (this.#db.prepare('SELECT MAX(num) AS n FROM jobs').get() as { n: number | null }).n ?? 0;
    const maxToken = (this.#db.prepare('SELECT MAX(token) AS t FROM jobs').get() as { t: number | null }).t ?? 0;
    return {
      jobSeq: Math.max(this.#counter(meta, 'job_seq'), maxNum),
      tokenSeq: Math.max(this.#counter(meta, 'token_seq'), maxToken),
    };
  }

  /** A sequence the meta table keeps (0 if it has none): a count, else the journal is corrupt (ids and tokens would repeat). */
  #counter(meta: ReadonlyMap<string, number>, key: string): number {
    const value = meta.get(key) ?? 0;
    if (!Number.isSafeInteger(value) || value < 0) throw new JournalCorruptError(`The journal ${this.#db.name} has a damaged ${key}: ${value}`);
    return value;
  }

  /** Every job, in submission order. A row that cannot be a job's makes the journal corrupt. */
  rows(): LoggedJob[] {
    const rows = guarded(this.#path, 'read', () => this.#db
      .prepare(
        `SELECT num, type, payload, priority, status, attempts, run_at AS runAt, last_error AS lastError, token,
         lease_until AS leaseUntil, finish_seq AS finishSeq, worker_id AS workerId, moves, max_attempts AS maxAttempts, result,
         idem_key AS key, key_ttl AS keyTtl, finished_at AS finishedAt, timeout_millis AS timeout, headers,
         submitted_at AS submittedAt, started_at AS startedAt, progress, group_name AS "group",
         flow_parent AS parent, waiting_children AS waiting FROM jobs ORDER BY num`,
      )
      .all() as LoggedJob[]);
    for (const row of rows) {
      // A BLOB (a binary payload or result) reads as a Buffer: handed on as a plain Uint8Array over the same bytes.
      row.payload = fromSql(row.payload);
      if (row.result !== null) row.result = fromSql(row.result);
      const problem = rowProblem(row);
      if (problem !== null) throw new JournalCorruptError(`The journal ${this.#db.name} has a damaged job row J${row.num}: ${problem}`);
    }
    return rows;
  }

  close(): void {
    if (this.#db.open) guarded(this.#path, 'close', () => this.#db.close());
  }
}

/** Journals this thread released while their owner row could not be deleted, by `journalKey`. */
const releasedHere = new Set<string>();

/** One name per journal file, however the path to it is spelled. */
function journalKey(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * Why a journal could not be opened: a full disk, a read-only file or an
 * I/O error as such (see `journalFailure`); anything else means the file is
 * not a journal we can use.
 */
function openFailure(error: unknown, path: string, what: string): Error {
  const failure = journalFailure(error, path, 'open');
  if (failure instanceof JournalWriteError && failure.code !== 'ERR_JOURNAL_WRITE') return failure;
  return new JournalCorruptError(`${what}: ${(error as Error).message}`, { cause: error });
}

const STATUSES = new Set<string>(Object.values(JobStatus));

/** What makes `row` impossible as a job, or null. */
function rowProblem(row: LoggedJob): string | null {
  if (!Number.isSafeInteger(row.num) || row.num < 1) return `num ${row.num}`;
  if (typeof row.type !== 'string' || row.type.trim() === '') return 'a blank type';
  if (typeof row.payload !== 'string' && !(row.payload instanceof Uint8Array)) return 'no payload';
  if (!STATUSES.has(row.status)) return `status ${JSON.stringify(row.status)}`;
  if (!Number.isInteger(row.priority)) return `priority ${row.priority}`;
  if (!Number.isSafeInteger(row.attempts) || row.attempts < 0) return `attempts ${row.attempts}`;
  if (!Number.isInteger(row.maxAttempts) || row.maxAttempts < 0 || row.maxAttempts > MAX_ATTEMPTS) return `maxAttempts ${row.maxAttempts}`;
  if (row.status === JobStatus.RUNNING && row.attempts < 1) return 'RUNNING without an attempt';
  if (row.key !== null && (typeof row.key !== 'string' || row.key === '' || Buffer.byteLength(row.key) > MAX_KEY_BYTES)) return `key ${JSON.stringify(row.key)}`;
  if (!Number.isInteger(row.timeout) || row.timeout < 0 || row.timeout > MAX_LEASE_LENGTH) return `timeout ${row.timeout}`;
  if (!(row.keyTtl >= 0)) return `keyTtl ${row.keyTtl}`;
  for (const field of ['runAt', 'leaseUntil', 'keyTtl'] as const) {
    if (typeof row[field] !== 'number' || !Number.isFinite(row[field])) return `${field} ${row[field]}`;
  }
  for (const field of ['finishedAt', 'submittedAt', 'startedAt', 'progress'] as const) {
    if (row[field] !== null && (typeof row[field] !== 'number' || !Number.isFinite(row[field]))) return `${field} ${row[field]}`;
  }
  // Counts: past 2^53 a count stops counting (the next token would equal the last, and fence nothing).
  for (const field of ['token', 'finishSeq', 'moves'] as const) {
    if (!Number.isSafeInteger(row[field]) || row[field] < 0) return `${field} ${row[field]}`;
  }
  if (row.lastError !== null && typeof row.lastError !== 'string') return 'a lastError that is not text';
  // A BLOB is a binary result's bytes: any bytes are.
  if (row.result !== null && (row.status !== JobStatus.SUCCEEDED || !(row.result instanceof Uint8Array || isJson(row.result)))) return 'a result that is not the JSON of a SUCCEEDED job';
  if (row.headers !== null && !isStringRecord(row.headers)) return 'headers that are not the JSON of an object of strings';
  if (!Number.isSafeInteger(row.parent) || Math.abs(row.parent) >= row.num) return `parent ${row.parent}`;
  if (!Number.isSafeInteger(row.waiting) || row.waiting < 0) return `waiting ${row.waiting}`;
  if (row.group !== null && (typeof row.group !== 'string' || row.group.trim() === '' || Buffer.byteLength(row.group) > MAX_GROUP_BYTES)) return `group ${JSON.stringify(row.group)}`;
  return null;
}

/**
 * A payload or result as SQLite binds it: text as TEXT, bytes as a BLOB (a
 * Buffer over the same memory, which the driver binds; the payload column's
 * TEXT affinity keeps a BLOB as it is, so no migration is needed).
 */
function sqlValue<T extends string | Uint8Array | null>(value: T): string | Buffer | null {
  return value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.length) : (value as string | Buffer | null);
}

/** A value read back: a BLOB's Buffer as a plain Uint8Array over its bytes (what a binary job's reader gets), text as it is. */
function fromSql<T>(value: T): T | Uint8Array {
  return Buffer.isBuffer(value) ? new Uint8Array(value.buffer, value.byteOffset, value.length) : value;
}

function isJson(text: unknown): boolean {
  return parsedJson(text) !== INVALID;
}

function isStringRecord(text: unknown): boolean {
  const value = parsedJson(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) && Object.values(value).every((field) => typeof field === 'string');
}

const INVALID = Symbol('invalid JSON');

/** The value of a JSON text, or INVALID for anything else. */
function parsedJson(text: unknown): unknown {
  if (typeof text !== 'string') return INVALID;
  try {
    return JSON.parse(text);
  } catch {
    return INVALID;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A non-empty file that does not start like a SQLite database is refused before SQLite touches it. */
function checkHeader(path: string): void {
  const stats = fileSystem(path, () => statSync(path, { throwIfNoEntry: false }));
  if (stats === undefined) {
    const directory = fileSystem(path, () => statSync(dirname(resolve(path)), { throwIfNoEntry: false }));
    if (directory === undefined || !directory.isDirectory()) throw new InvalidArgumentError(`No directory for the journal ${path}`);
    return;
  }
  if (stats.isDirectory()) throw new InvalidArgumentError(`${path} is a directory, not a journal file`);
  if (stats.size === 0) return;
  const head = Buffer.alloc(SQLITE_HEADER.length);
  fileSystem(path, () => {
    const fd = openSync(path, 'r');
    try {
      readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  });
  if (!head.equals(SQLITE_HEADER)) throw new JournalCorruptError(`${path} is not a leasehold journal (not a SQLite database)`);
}

/**
 * Runs a file-system step of opening the journal: a failure of the operating
 * system's (EACCES, EIO, ELOOP...) becomes JournalIOError, never a raw Node error.
 */
function fileSystem<T>(path: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'ENOTDIR') throw new InvalidArgumentError(`No directory for the journal ${path}`);
    throw new JournalIOError(`Could not read the journal ${path}: ${message}${code === undefined ? '' : ` (${code})`}`, { cause: error });
  }
}

/**
 * A database with other tables, or a newer schema, is foreign; a damaged one is refused. Reads only.
 * Returns its schema version, read in the same snapshot: 0 only for an empty database.
 */
function check(db: Database.Database, path: string): number {
  const version = db.pragma('user_version', { simple: true }) as number;
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
  if (version > MIGRATIONS.length) {
    throw new JournalCorruptError(`${path} has journal schema ${version}, newer than this leasehold knows (${MIGRATIONS.length})`);
  }
  if (version === 0 ? tables.length > 0 : !(tables.includes('jobs') && tables.includes('meta'))) {
    throw new JournalCorruptError(`${path} is not a leasehold journal (tables: ${tables.join(', ') || 'none'})`);
  }
  if (version > 0) {
    const result = db.pragma('quick_check', { simple: true });
    if (result !== 'ok') throw new JournalCorruptError(`The journal ${path} is damaged: ${String(result)}`);
  }
  return version;
}

/** Applies the migrations not applied yet (inside the caller's write transaction). */
function migrate(db: Database.Database, path: string): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version === 0 && (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n > 0) {
    throw new JournalCorruptError(`${path} is not a leasehold journal`);
  }
  for (let next = version; next < MIGRATIONS.length; next++) db.exec(MIGRATIONS[next]!);
  if (version < MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
}

/**
 * Runs `step`, again while SQLite answers "busy": some of its locks (changing
 * the journal mode, a write lock others wait for) do not wait by themselves.
 */
function whenFree<T>(step: () => T): T {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return step();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if ((code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') || Date.now() > deadline) throw error;
      Atomics.wait(PAUSE, 0, 0, 5 + Math.random() * 20);
    }
  }
}
const PAUSE = new Int32Array(new SharedArrayBuffer(4));
