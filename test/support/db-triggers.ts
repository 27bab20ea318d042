import type { DataSource } from 'typeorm';

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
