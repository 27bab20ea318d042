import sqlite3 from 'sqlite3';

/**
 * Set on every connection as it opens (TypeORM then adds `journal_mode = WAL` and `foreign_keys`).
 * - `synchronous = NORMAL`: under WAL a commit no longer waits for an fsync; the WAL is synced at
 *   checkpoints. A committed transaction survives a crash or kill of the server process (the data is in
 *   the OS's page cache and the WAL); only an OS crash or power loss can lose the last commits. That is
 *   SQLite's recommended setting for WAL and keeps "written before the next step" for a killed server.
 * - `temp_store = MEMORY`: sorts and temporary indexes stay off the disk.
 * - `cache_size = -32768`: a 32 MiB page cache (the default is 2 MiB) so the hot tables stay in memory.
 */
const PRAGMAS =
  'PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768;';

type OpenCallback = (err: Error | null) => void;

/** A `sqlite3.Database` that runs PRAGMAS before TypeORM gets it. */
function TunedDatabase(filename: string, callback: OpenCallback): sqlite3.Database {
  const db: sqlite3.Database = new sqlite3.Database(filename, (err) => {
    if (err) callback(err);
    else db.exec(PRAGMAS, callback);
  });
  return db;
}

/**
 * sqlite3 as TypeORM's `driver` option. TypeORM calls `verbose()` on the module it loads, which wraps
 * every query in a long-stack-trace helper that captures a stack and formats all arguments with
 * util.inspect, about a tenth of a busy server's CPU; here `verbose()` returns the module unchanged.
 */
export const SQLITE_DRIVER = {
  ...sqlite3,
  Database: TunedDatabase,
  verbose: () => SQLITE_DRIVER,
};
