import { closeSync, openSync, readFileSync, realpathSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** What holds a SQLite file in this process: one lock file, shared by the apps of this process. */
const held = new Map<string, number>();

/**
 * SQLite is for one process: a second server on the same file would corrupt what the first keeps in
 * memory (sequence counters, caches), so it refuses to start. The lock is a file beside the database (by
 * its real path) holding the owner's pid, created exclusively; one left by a dead process (kill -9) is
 * taken over.
 */
export function lockSqliteFile(dbPath: string): () => void {
  const lockPath = `${realPath(dbPath)}.lock`;
  const count = held.get(lockPath);
  if (count !== undefined) {
    held.set(lockPath, count + 1);
  } else {
    createLock(lockPath, dbPath);
    held.set(lockPath, 1);
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (held.get(lockPath) ?? 1) - 1;
    if (n > 0) return void held.set(lockPath, n);
    held.delete(lockPath);
    try {
      if (ownerOf(lockPath) === process.pid) unlinkSync(lockPath);
    } catch {
      // already gone
    }
  };
}

/**
 * The file's one name, so that a second server reaching it through a symbolic link (or a link to its
 * folder) meets the same lock: the file's real path, or its folder's when it does not exist yet.
 */
function realPath(dbPath: string): string {
  try {
    return realpathSync(dbPath);
  } catch {
    try {
      return join(realpathSync(dirname(dbPath)), basename(dbPath));
    } catch {
      return dbPath;
    }
  }
}

function createLock(lockPath: string, dbPath: string): void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const pid = ownerOf(lockPath);
    if (pid !== null && pid !== process.pid && isAlive(pid)) {
      throw new Error(
        `the SQLite database ${dbPath} is in use by another server process (pid ${pid}); ` +
          `SQLite serves one process only: stop that one, or use PostgreSQL (DATABASE_URL) to run several instances`,
      );
    }
    // left by a process that is gone
    try {
      unlinkSync(lockPath);
    } catch {
      // another starter removed it first; the exclusive create decides
    }
  }
  throw new Error(`could not lock the SQLite database ${dbPath} (${lockPath})`);
}

function ownerOf(lockPath: string): number | null {
  try {
    const pid = Number(readFileSync(lockPath, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
