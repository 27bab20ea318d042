import type { Database } from 'better-sqlite3';

/**
 * Set on the connection as it opens (TypeORM then adds `foreign_keys = ON` and `journal_mode = WAL`).
 * - `synchronous = NORMAL`: under WAL a commit no longer waits for an fsync; the WAL is synced at
 *   checkpoints. A committed transaction survives a crash or kill of the server process (the data is in
 *   the OS's page cache and the WAL); only an OS crash or power loss can lose the last commits. That is
 *   SQLite's recommended setting for WAL and keeps "written before the next step" for a killed server.
 * - `temp_store = MEMORY`: sorts and temporary indexes stay off the disk.
 * - `cache_size = -32768`: a 32 MiB page cache (the default is 2 MiB) so the hot tables stay in memory.
 */
export function prepareSqlite(db: Database): void {
  db.pragma('synchronous = NORMAL');
  db.pragma('temp_store = MEMORY');
  db.pragma('cache_size = -32768');
}
