import { DataSource } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { sqlTable } from '../../src/database/sql-names';
import { PassageEntity } from '../../src/memory/archival.entities';
import { startApp } from '../support/app-harness';

/**
 * The migrations build the schema the entities describe, on SQLite and on PostgreSQL (TEST_DATABASE_URL):
 * an entity change without its migration shows up here as a statement TypeORM would run to sync.
 */
describe('schema: the migrations match the entities', () => {
  it('leaves TypeORM nothing to synchronize', async () => {
    const t = await startApp();
    try {
      const ds = t.app.get(DataSource);
      const schema = (ds.options as { schema?: string }).schema;
      const sqlite = ds.options.type === 'better-sqlite3';
      if (!sqlite) {
        // the passages' generated `search` column makes TypeORM read its metadata table, which sync creates
        await ds.query(
          `CREATE TABLE IF NOT EXISTS ${sqlTable(schema, 'typeorm_metadata')} ("type" varchar NOT NULL, "database" varchar, "schema" varchar, "table" varchar, "name" varchar, "value" text)`,
        );
      } else {
        // The migrations spell boolean defaults `false` (TypeORM's Table API writes them as given); SQLite
        // reads that as 0, the entities' spelling, so compare them as one.
        const driver = ds.driver as unknown as { normalizeDefault(c: ColumnMetadata): unknown };
        const normalize = driver.normalizeDefault.bind(driver);
        driver.normalizeDefault = (c) =>
          typeof c.default === 'boolean' ? String(c.default) : normalize(c);
      }
      const pending = (await ds.driver.createSchemaBuilder().log()).upQueries
        .map((q) => q.query)
        .filter((q) => !fullTextIndex(q, sqlite));
      expect(pending).toEqual([]);
      if (sqlite) {
        // the passages table, left out above: its key is FTS5's rowid `seq`, which no entity names, and
        // `id` (the entity's key) is unique; every other column is as the entity says
        const runner = ds.createQueryRunner();
        try {
          const table = (await runner.getTable('passages'))!;
          const metadata = ds.getMetadata(PassageEntity);
          const names = metadata.columns.map((c) => c.databaseName);
          expect(table.columns.map((c) => c.name).filter((n) => !names.includes(n))).toEqual([
            'seq',
          ]);
          const changed = ds.driver.findChangedColumns(table.columns, metadata.columns);
          expect(changed.map((c) => c.databaseName)).toEqual(['id']);
          expect(table.findColumnByName('id')).toMatchObject({ isPrimary: false, isUnique: true });
        } finally {
          await runner.release();
        }
      }
    } finally {
      await t.close();
    }
  });
});

/**
 * What sync would drop of the passages' full-text index, which no entity names (it is read by raw SQL):
 * SQLite's FTS5 rowid `seq` (sync rebuilds the table without it), PostgreSQL's `search` column and index.
 */
function fullTextIndex(query: string, sqlite: boolean): boolean {
  return sqlite
    ? /"(temporary_)?passages"|"idx_passages_/.test(query)
    : /"idx_passages_search"|DROP COLUMN "search"|"typeorm_metadata"/.test(query);
}
