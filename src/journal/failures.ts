import { accessSync, constants, statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { JournalFullError, JournalIOError, JournalReadOnlyError, JournalWriteError } from '../errors.js';

/**
 * The one place a SQLite failure becomes a leasehold error: by SQLite's
 * result code, disk full, read-only and I/O errors get classes of their own,
 * any other SQLite failure the catch-all JournalWriteError. (SQLite reports a
 * journal on a read-only file system as "cannot open": it cannot create the
 * WAL's shared-memory file; and a full disk that will not let it grow that
 * file as an I/O error, SQLITE_IOERR_SHMSIZE, so an I/O error on a file
 * system with no space left is taken for a full disk.) Anything that is
 * not SQLite's (a bug of ours, a LockLost) passes through unchanged.
 */
export function journalFailure(error: unknown, path: string, action: string): unknown {
  if (!isSqliteError(error)) return error;
  const message = `Could not ${action} the journal ${path}: ${error.message} (${error.code})`;
  const options = { cause: error };
  if (error.code === 'SQLITE_FULL' || (error.code.startsWith('SQLITE_IOERR') && noSpaceLeft(path))) return new JournalFullError(message, options);
  if (error.code.startsWith('SQLITE_READONLY') || (error.code.startsWith('SQLITE_CANTOPEN') && !writable(path))) {
    return new JournalReadOnlyError(message, options);
  }
  if (error.code.startsWith('SQLITE_IOERR')) return new JournalIOError(message, options);
  return new JournalWriteError(message, options);
}

/** Runs `step`, turning a SQLite failure into its leasehold error (see `journalFailure`). */
export function guarded<T>(path: string, action: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw journalFailure(error, path, action);
  }
}

/** By its name, not its class: this module must load where better-sqlite3, an optional dependency, is not installed. */
function isSqliteError(error: unknown): error is InstanceType<typeof Database.SqliteError> {
  return error instanceof Error && error.name === 'SqliteError' && typeof (error as { code?: unknown }).code === 'string';
}

function writable(path: string): boolean {
  try {
    accessSync(dirname(resolve(path)), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether the file system that holds `path` has no space left that this process may use. */
function noSpaceLeft(path: string): boolean {
  try {
    return statfsSync(dirname(resolve(path))).bavail === 0;
  } catch {
    return false;
  }
}
