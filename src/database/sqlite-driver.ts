import type { Database } from 'better-sqlite3';

/**
 * Set on the connection as it opens (TypeORM then adds `foreign_keys = ON` and `journal_mode = WAL`).
 * - `synchronous = NORMAL`: under WAL a commit no longer waits for an fsync; the WAL is synced at
 *   checkpoints. A committed transaction survives a crash or kill of the server process (the data is in
 *   the OS's page cache and the WAL); only an OS crash or power loss can lose the last commits. That is
 *   SQLite's recommended setting for WAL and keeps "written before the next step" for a killed server.
 * - `temp_store = MEMORY`: sorts and temporary indexes stay off the disk.
 * - `cache_size`: `database.sqlite_cache_mib` (2 MiB, SQLite's own default). Bigger is not free: a commit
 *   after a B-tree balance walks every cached page (SQLite's page cache keeps the largest page number it
 *   saw, and the balance renumbers a page through the locking page's number), so a 32 MiB cache cost
 *   ~10 % more CPU per step than 2 MiB (docs/performance.md, "The SQLite page cache").
 */
export function prepareSqlite(db: Database, cacheMib: number): void {
  db.pragma('synchronous = NORMAL');
  db.pragma('temp_store = MEMORY');
  db.pragma(`cache_size = -${cacheMib * 1024}`);
}
