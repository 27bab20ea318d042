import { Logger } from '@nestjs/common';
import { DataSource, DataSourceOptions } from 'typeorm';
import { sqlTable } from './sql-names';
import { lockSqliteFile } from './sqlite-process-lock';

/** What gives an open database back (the SQLite process lock), by data source. */
const releases = new WeakMap<DataSource, () => void>();

/**
 * Opens the database and applies the pending migrations. On PostgreSQL the migrations run under an
 * advisory lock (per schema), so instances booting at once apply them once: the others wait, then
 * find nothing pending. On SQLite the file is locked for this process first.
 */
export async function openDatabase(options: DataSourceOptions): Promise<DataSource> {
  const release =
    options.type === 'better-sqlite3' ? lockSqliteFile(options.database) : () => undefined;
  try {
    const ds = new DataSource(options);
    await ds.initialize();
    try {
      await migrate(ds, options.type === 'postgres' ? (options.schema ?? 'public') : null);
    } catch (e) {
      await ds.destroy().catch(() => undefined);
      throw e;
    }
    releases.set(ds, release);
    return ds;
  } catch (e) {
    release();
    throw e;
  }
}

/** Gives back what openDatabase took (the app closes). */
export function releaseDatabase(ds: DataSource): void {
  releases.get(ds)?.();
  releases.delete(ds);
}

async function migrate(ds: DataSource, pgSchema: string | null): Promise<void> {
  let applied;
  if (pgSchema !== null) {
    const lock = ds.createQueryRunner();
    await lock.connect();
    const key = `rulebound migrations ${pgSchema}`;
    try {
      await lock.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
      try {
        applied = await ds.runMigrations({ transaction: 'all' });
      } finally {
        await lock.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
      }
    } finally {
      await lock.release();
    }
  } else {
    applied = await ds.runMigrations({ transaction: 'all' });
  }
  if (applied.length > 0)
    new Logger('Database').log(
      `applied ${applied.length} migration(s): ${applied.map((m) => m.name).join(', ')}`,
    );
  await refuseNewerSchema(ds, pgSchema);
}

/**
 * A database a newer version migrated has tables and columns this version does not know of, and
 * writes that would break it: the boot stops, saying how to go back (docs/operability.md).
 */
async function refuseNewerSchema(ds: DataSource, pgSchema: string | null): Promise<void> {
  const known = new Set(ds.migrations.map((m) => m.name ?? m.constructor.name));
  const table = sqlTable(pgSchema, ds.options.migrationsTableName ?? 'migrations');
  const rows = await ds.query<{ name: string }[]>(`SELECT name FROM ${table}`);
  const unknown = rows.map((r) => r.name).filter((n) => !known.has(n));
  if (unknown.length)
    throw new Error(
      `the database was migrated by a newer version of this server (${unknown.join(', ')}); ` +
        `start that version, or revert those migrations with it first (docs/operability.md)`,
    );
}
