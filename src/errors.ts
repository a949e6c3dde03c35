/**
 * Every error leasehold throws. Each class carries a stable `code`: errors that
 * cross a thread lose their prototype, so compare `code` (or `name`), never a
 * message string.
 */

export type ErrorCode =
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_JOB_NOT_FOUND'
  | 'ERR_ILLEGAL_STATE'
  | 'ERR_STALE_LEASE'
  | 'ERR_QUEUE_FULL'
  | 'ERR_JOURNAL_BUSY'
  | 'ERR_JOURNAL_CORRUPT'
  | 'ERR_JOURNAL_WRITE'
  | 'ERR_JOURNAL_FULL'
  | 'ERR_JOURNAL_READONLY'
  | 'ERR_JOURNAL_IO'
  | 'ERR_BACKEND_UNAVAILABLE'
  | 'ERR_BACKEND_AUTH'
  | 'ERR_BACKEND_TLS'
  | 'ERR_MISSING_DEPENDENCY'
  | 'ERR_QUEUE_NOT_FOUND'
  | 'ERR_HANDLER_MODULE'
  | 'ERR_JOB_FAILED'
  | 'ERR_TIMEOUT'
  | 'ERR_ABORTED'
  | 'ERR_UNSUPPORTED'
  | 'ERR_JOB_CANCELLED'
  | 'ERR_RESERVATION_LOST';

export class JobQueueError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A bad argument: blank type or worker id, bad lease length, priority, runAt, policy or option. */
export class InvalidArgumentError extends JobQueueError {
  constructor(message: string) {
    super('ERR_INVALID_ARGUMENT', message);
  }
}

/** An unknown, malformed or evicted job id. */
export class JobNotFoundError extends JobQueueError {
  constructor(message: string) {
    super('ERR_JOB_NOT_FOUND', message);
  }
}

/** The operation is not allowed in the job's current state. */
export class IllegalStateError extends JobQueueError {
  constructor(message: string, code: ErrorCode = 'ERR_ILLEGAL_STATE') {
    super(code, message);
  }
}

/** complete / fail / extend / release / progress with a token that is not the job's current, valid lease. */
export class StaleLeaseError extends IllegalStateError {
  constructor(message: string) {
    super(message, 'ERR_STALE_LEASE');
  }
}

/** No room for a new job; nothing already queued was lost or evicted to make room. */
export class QueueFullError extends JobQueueError {
  constructor(message: string) {
    super('ERR_QUEUE_FULL', message);
  }
}

/**
 * What `finished(jobId)` rejects with when the job ended without succeeding:
 * it is DEAD (no attempts left, or failed permanently) or CANCELLED.
 * `lastError` is the job's, as `view` shows it.
 */
export class JobFailedError extends JobQueueError {
  readonly jobId: string;
  readonly status: 'DEAD' | 'CANCELLED';
  readonly lastError: string | null;
  constructor(jobId: string, status: 'DEAD' | 'CANCELLED', lastError: string | null) {
    const why = status === 'DEAD' ? `is DEAD${lastError === null ? '' : `: ${lastError}`}` : 'was CANCELLED';
    super('ERR_JOB_FAILED', `Job ${jobId} ${why}`);
    this.jobId = jobId;
    this.status = status;
    this.lastError = lastError;
  }
}

/** A wait (`finished` with `timeoutMillis`) that ran out before what it waited for happened; nothing changed. */
export class TimeoutError extends JobQueueError {
  constructor(message: string) {
    super('ERR_TIMEOUT', message);
  }
}

/** A wait (`finished` with `signal`) given up because its AbortSignal aborted; `cause` is the signal's reason. */
export class AbortedError extends JobQueueError {
  constructor(message: string, options?: ErrorOptions) {
    super('ERR_ABORTED', message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * The reason a WorkerPool handler's `ctx.signal` aborts with when its job was
 * cancelled while RUNNING: stop the work; whatever the handler returns or
 * throws afterwards is refused, and the job stays CANCELLED.
 */
export class JobCancelledError extends JobQueueError {
  readonly jobId: string;
  constructor(jobId: string) {
    super('ERR_JOB_CANCELLED', `Job ${jobId} was cancelled while it ran`);
    this.jobId = jobId;
  }
}

/**
 * A submit of bytes from `reserveBytes` whose reservation the queue took
 * back: its thread was taken for dead (its row revoked, or reported exited
 * by `threadExited`), or the instance that reserved it was closed. Nothing
 * was submitted; reserve again and write the bytes anew.
 */
export class ReservationLostError extends JobQueueError {
  constructor() {
    super('ERR_RESERVATION_LOST', 'The reserved bytes were taken back before their submit (their thread was taken for dead, or their queue instance closed): nothing was submitted; reserve and write them again');
  }
}

/** Describes a value for an error message: ``Expected ..., got `0` (number)``. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return `\`${JSON.stringify(value)}\` (string)`;
  if (typeof value === 'bigint') return `\`${value}n\` (bigint)`;
  if (value === null) return '`null`';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `an object`;
  return `\`${String(value)}\` (${typeof value})`;
}

/**
 * What a thrown value says, as text: an Error's message, anything else as
 * `String` shows it. Never throws itself: a value that cannot be shown (its
 * toString throws, or gives no string) is named by its type, so that code
 * reporting a handler's failure cannot fail in turn.
 */
export function thrownText(error: unknown): string {
  try {
    const text: unknown = error instanceof Error ? error.message : String(error);
    if (typeof text === 'string') return text;
  } catch {
    // Shown by its type below.
  }
  return `a thrown ${error === null ? 'null' : typeof error} that cannot be shown as text`;
}

/** Why the queue core refused an operation. The core returns these; `refusalError` alone turns them into errors. */
export const enum Refusal {
  NotFound = -1,
  Evicted = -2,
  StaleLease = -3,
  NotPending = -4,
  NotDead = -5,
  NoSlot = -6,
  NoBytes = -7,
  /** Redis only: the queue's keys are of a data model newer than this leasehold knows. */
  NewerDataModel = -8,
  /** remove of a RUNNING job. */
  Running = -9,
  /** An edit of a pending job (changePriority, changeDelay, promote, updatePayload) of a job that is not PENDING. */
  NotEditable = -10,
  /** A submit of a reservation (`reserveBytes`) whose run was reclaimed. */
  ReservationLost = -11,
}

export function refusalError(refusal: Refusal, jobId: string, capacity: number): JobQueueError {
  switch (refusal) {
    case Refusal.NotFound:
      return new JobNotFoundError(`No job with id ${jobId}`);
    case Refusal.Evicted:
      return new JobNotFoundError(
        `Job ${jobId} was evicted or removed: finished jobs are evicted, oldest first, when room is needed or the retain option asks, and remove(id) takes any job not RUNNING`,
      );
    case Refusal.StaleLease:
      return new StaleLeaseError(`The token is not the current lease of job ${jobId}: the lease was lost, expired, cancelled, or already used`);
    case Refusal.NotPending:
      return new IllegalStateError(`Job ${jobId} can be cancelled only while PENDING or RUNNING`);
    case Refusal.NotDead:
      return new IllegalStateError(`Job ${jobId} can be retried from the dead letters only while DEAD`);
    case Refusal.NoSlot:
      return new QueueFullError(`The queue is full: all ${capacity} slots hold pending, running or dead jobs`);
    case Refusal.NoBytes:
      return new QueueFullError('The queue is full: no arena bytes left for the job (raise `arenaBytes`)');
    case Refusal.Running:
      return new IllegalStateError(`Job ${jobId} is RUNNING and cannot be removed: remove it once its lease has ended (complete, fail, release or expiry)`);
    case Refusal.NewerDataModel:
      return new IllegalStateError('The queue in Redis was written by a newer leasehold, in a layout this one does not know: upgrade this client');
    case Refusal.NotEditable:
      return new IllegalStateError(`Job ${jobId} can be changed (priority, delay, promote, payload) only while PENDING`);
    case Refusal.ReservationLost:
      return new ReservationLostError();
  }
}

/**
 * Thrown by a job handler for a failure no retry will fix (a poison job): the
 * job is dead-lettered at once. Matched by `name`, so a handler module may
 * also throw its own class named 'PermanentError'.
 */
export class PermanentError extends Error {
  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/** The journal is owned by another process (or this one, through another queue). */
export class JournalBusyError extends JobQueueError {
  constructor(message: string) {
    super('ERR_JOURNAL_BUSY', message);
  }
}

/** The file is not a leasehold journal, or is damaged: it was left untouched. */
export class JournalCorruptError extends JobQueueError {
  constructor(message: string, options?: ErrorOptions) {
    super('ERR_JOURNAL_CORRUPT', message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * The journal could not be written (or read): SQLite failed. The call that
 * threw it changed nothing, in memory or in the journal; the queue works
 * again once the journal does. `cause` holds SQLite's own error. This class is
 * the catch-all; the common causes have subclasses of their own.
 */
export class JournalWriteError extends JobQueueError {
  constructor(message: string, options?: ErrorOptions, code: ErrorCode = 'ERR_JOURNAL_WRITE') {
    super(code, message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** The journal's disk is full (SQLITE_FULL): free space, and the next call goes through. */
export class JournalFullError extends JournalWriteError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'ERR_JOURNAL_FULL');
  }
}

/** The journal cannot be written: its file, directory or file system is read-only (SQLITE_READONLY*). */
export class JournalReadOnlyError extends JournalWriteError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'ERR_JOURNAL_READONLY');
  }
}

/** The operating system reported an I/O error on the journal's files (SQLITE_IOERR*). */
export class JournalIOError extends JournalWriteError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'ERR_JOURNAL_IO');
  }
}

/**
 * The queue's server (Redis) could not be reached, or the connection broke
 * while a call was in flight. The message says which: a call that was never
 * sent changed nothing; one whose reply was lost may or may not have taken
 * effect (a lost `poll` leaves a lease that simply expires). `cause` holds the
 * client's own error.
 */
export class BackendUnavailableError extends JobQueueError {
  constructor(message: string, options?: ErrorOptions) {
    super('ERR_BACKEND_UNAVAILABLE', message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * A feature needs an optional peer dependency that is not installed
 * (better-sqlite3 for `JobQueue.open`, ioredis for `RedisJobQueue`).
 * `packageName` is the package to install, `range` the versions that fit
 * (package.json's peerDependencies, as the README names them).
 */
export class MissingDependencyError extends JobQueueError {
  readonly packageName: string;
  readonly range: string | undefined;
  constructor(packageName: string, feature: string, options?: ErrorOptions & { range?: string }) {
    const spec = options?.range === undefined ? packageName : `${packageName}@${options.range}`;
    super('ERR_MISSING_DEPENDENCY', `${feature} needs the package ${packageName}: install it with \`npm install ${spec}\``);
    this.packageName = packageName;
    this.range = options?.range;
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** Where in a source file: its path, and the line and column (from 1). */
export interface SourcePlace {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/**
 * A WorkerPool's handler module did not load: it is missing, it has a syntax
 * error, or it threw while it was imported. `cause` is what its import threw
 * (a SyntaxError, ERR_MODULE_NOT_FOUND, the module's own error); `place`,
 * when known, is where: the syntax error's, or the module's line that threw.
 * `start()` rejects with it and starts nothing.
 */
export class HandlerModuleError extends JobQueueError {
  readonly moduleUrl: string;
  readonly place: SourcePlace | null;
  constructor(moduleUrl: string, place: SourcePlace | null, options: { cause: unknown }) {
    const at = place === null ? '' : ` (at ${place.file}:${place.line}:${place.column})`;
    super('ERR_HANDLER_MODULE', `The handler module ${moduleUrl} did not load: ${thrownText(options.cause)}${at}`);
    this.moduleUrl = moduleUrl;
    this.place = place;
    this.cause = options.cause;
  }
}

/**
 * A queue named by the caller does not exist where it was looked for
 * (`leasehold dashboard --redis URL --name Q` where no job was ever submitted
 * to Q). Nothing was served or changed. `queueName` is the name given.
 */
export class QueueNotFoundError extends JobQueueError {
  readonly queueName: string;
  constructor(queueName: string, where: string) {
    super('ERR_QUEUE_NOT_FOUND', `No queue named ${JSON.stringify(queueName)} in ${where}: no job was ever submitted to it (check the name)`);
    this.queueName = queueName;
  }
}

/**
 * An operation leasehold does not have, asked for by a tool made for another
 * queue (the dashboard's promote of a delayed job, or its delete of finished
 * ones). Nothing was changed.
 */
export class UnsupportedOperationError extends JobQueueError {
  constructor(message: string) {
    super('ERR_UNSUPPORTED', message);
  }
}

/**
 * The queue's server (Redis) refused who is connecting: a wrong password, an
 * unknown or disabled user, or no password where one is required. Not an
 * outage: trying again with the same credentials fails the same way. The
 * message names the server and the user, never the password; there is no
 * `cause`, as the client's own error carries the password it sent.
 */
export class BackendAuthError extends JobQueueError {
  constructor(message: string) {
    super('ERR_BACKEND_AUTH', message);
  }
}

/**
 * The TLS handshake with the queue's server failed: its certificate is not
 * trusted (or not for that host), or it refused this client's certificate
 * (missing, or signed by a CA it does not trust). Not an outage: fix the
 * certificates. `cause` holds the TLS layer's error.
 */
export class BackendTlsError extends JobQueueError {
  constructor(message: string, options?: ErrorOptions) {
    super('ERR_BACKEND_TLS', message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}
