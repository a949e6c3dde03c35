/**
 * Small file systems for the journal's full-disk tests: tmpfs mounts (root and
 * mount(8) needed; `mountRefusal` says why not, and the caller skips loudly),
 * unmounted and removed by `unmountAll` after each test, and `fillDisk`.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** The directories mounted on, until `unmountAll`. */
const mounts: string[] = [];

/** Mounts (mount `args` DIR) on `dir` (a fresh directory by default), unmounted by `unmountAll`; or returns why it cannot. */
export function tryMount(args: string[], dir = mkdtempSync(join(tmpdir(), 'leasehold-disk-'))): string | Error {
  try {
    execFileSync('mount', [...args, dir], { stdio: 'pipe' });
    mounts.push(dir);
    return dir;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return new Error(stderr || (error as Error).message);
  }
}

/** A fresh tmpfs of `size`, unmounted by `unmountAll`. */
export function mountTmpfs(size = '3M'): string {
  const dir = tryMount(['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs']);
  if (dir instanceof Error) throw dir;
  return dir;
}

/** Unmounts `dir` now, keeping the directory (to mount it again). */
export function unmount(dir: string): void {
  execFileSync('umount', [dir], { stdio: 'pipe' });
  mounts.splice(mounts.indexOf(dir), 1);
}

/** Unmounts and removes every directory mounted on since the last call: for afterEach. */
export function unmountAll(): void {
  for (const dir of mounts.splice(0)) {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Why this machine cannot mount a tmpfs (then the full-disk tests skip), or undefined: probed once, the probe gone at once. */
export const mountRefusal: Error | undefined = (() => {
  const probe = tryMount(['-t', 'tmpfs', '-o', 'size=1M', 'tmpfs']);
  if (probe instanceof Error) return probe;
  unmount(probe);
  rmSync(probe, { recursive: true, force: true });
  return undefined;
})();

/**
 * Fills the disk of `dir` to the last byte, after checkpointing the journal
 * at `path` (its WAL then has no page to reuse: from then on every commit
 * needs a page the disk no longer has). `leave` bytes stay free. Returns a
 * function that frees the space again.
 */
export function fillDisk(dir: string, path: string, leave = 0): () => void {
  const db = new Database(path);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  const filler = join(dir, 'filler');
  const fd = openSync(filler, 'w');
  try {
    for (let chunk = 1 << 16; chunk >= 1; ) {
      try {
        writeSync(fd, Buffer.alloc(chunk));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        chunk >>= 1;
      }
    }
  } finally {
    closeSync(fd);
  }
  if (leave > 0) {
    // Give back `leave` bytes: rewrite the filler shorter.
    const size = Number(execFileSync('stat', ['-c', '%s', filler]).toString());
    execFileSync('truncate', ['-s', String(Math.max(0, size - leave)), filler]);
  }
  return () => {
    if (existsSync(filler)) unlinkSync(filler);
  };
}
