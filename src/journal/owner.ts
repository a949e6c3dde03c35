import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { JournalBusyError } from '../errors.js';

/**
 * One process owns a journal at a time: it holds `${path}.lock`, a file
 * created exclusively that names its pid. A lock whose pid is no longer alive
 * (the owner was killed) is stale and taken over. Threads of the owning
 * process share its ownership.
 */
export class JournalOwner {
  readonly #lockPath: string;

  private constructor(lockPath: string) {
    this.#lockPath = lockPath;
  }

  static acquire(journalPath: string): JournalOwner {
    const lockPath = `${journalPath}.lock`;
    for (let tries = 0; ; tries++) {
      try {
        const fd = openSync(lockPath, 'wx');
        writeSync(fd, String(process.pid));
        closeSync(fd);
        return new JournalOwner(lockPath);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 3) throw error;
      }
      const holder = JournalOwner.holder(journalPath);
      if (holder !== null && isAlive(holder)) {
        throw new JournalBusyError(`The journal ${journalPath} is owned by process ${holder}${holder === process.pid ? ' (this one)' : ''}`);
      }
      // Stale: its owner died without releasing it.
      try {
        unlinkSync(lockPath);
      } catch {
        // Another process removed it first; try again.
      }
    }
  }

  /** The pid that holds the journal, or null if nobody does. */
  static holder(journalPath: string): number | null {
    try {
      const pid = Number(readFileSync(`${journalPath}.lock`, 'utf8'));
      return Number.isInteger(pid) && pid > 0 ? pid : null;
    } catch {
      return null;
    }
  }

  release(): void {
    try {
      unlinkSync(this.#lockPath);
    } catch {
      // Already gone.
    }
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
