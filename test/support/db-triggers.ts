import { DataSource, type MigrationInterface } from 'typeorm';
import type { AppConfig } from '../../src/config/app-config';
import { dataSourceOptions } from '../../src/database/data-source-options';

/** The names of the triggers the app's tables have (PostgreSQL: in the app's schema). */
export async function triggerNames(ds: DataSource, schema: string | null): Promise<Set<string>> {
  const rows: { name: string }[] =
    ds.options.type === 'postgres'
      ? await ds.query(
          `SELECT t.tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE NOT t.tgisinternal AND n.nspname = COALESCE($1, current_schema())`,
          [schema],
        )
      : await ds.query(`SELECT name FROM sqlite_master WHERE type = 'trigger'`);
  return new Set(rows.map((r) => r.name));
}

/**
 * Runs one counting migration down and up again on a closed app's database, as a database of the version
 * before it would be migrated (later migrations stay; undoing "the last" would undo another).
 */
export async function rerunMigration(
  config: AppConfig,
  migration: MigrationInterface,
  table: string,
): Promise<void> {
  const ds = new DataSource(dataSourceOptions(config));
  await ds.initialize();
  const runner = ds.createQueryRunner();
  try {
    await migration.down(runner);
    expect(await runner.hasTable(table)).toBe(false);
    await runner.startTransaction();
    await migration.up(runner);
    await runner.commitTransaction();
  } finally {
    await runner.release();
    await ds.destroy();
  }
}
