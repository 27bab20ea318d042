import type { DataSource, EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { sqlTable } from './sql-names';

/**
 * Reads on the hot path (a message's parked-run check, a run's message context, a batch's state) as one
 * bound statement, hydrated column by column with the driver's own conversion (JSON columns,
 * transformers), so a row reads as TypeORM's `find` gives it, without its query building and entity
 * mapping (which cost more than the statement itself). The SQL text is built once per call site.
 */
export class RowReader<T extends ObjectLiteral> {
  /** Per data source: the schema (PostgreSQL) and the placeholders differ between them. */
  private readonly prepared = new WeakMap<DataSource, { sql: string; columns: ColumnMetadata[] }>();

  /**
   * `where`: the condition and the rest of the statement (ORDER BY, LIMIT) with column names as stored
   * and `?` for each parameter.
   */
  constructor(
    private readonly entity: EntityTarget<T>,
    private readonly where: string,
  ) {}

  async all(db: DataSource | EntityManager, params: unknown[]): Promise<T[]> {
    const ds = 'connection' in db ? db.connection : db;
    const { driver } = ds;
    let p = this.prepared.get(ds);
    if (!p) {
      const meta = ds.getMetadata(this.entity);
      let n = 0;
      const where =
        driver.options.type === 'postgres'
          ? this.where.replace(/\?/g, () => `$${++n}`)
          : this.where;
      const names = meta.columns.map((c) => driver.escape(c.databaseName)).join(', ');
      const sql = `SELECT ${names} FROM ${sqlTable(meta.schema, meta.tableName)} WHERE ${where}`;
      this.prepared.set(ds, (p = { sql, columns: meta.columns }));
    }
    const { columns } = p;
    const raw = await db.query<Record<string, unknown>[]>(p.sql, params);
    return raw.map((r) => {
      const row: Record<string, unknown> = {};
      for (const c of columns)
        row[c.propertyName] = driver.prepareHydratedValue(r[c.databaseName], c) as unknown;
      return row as T;
    });
  }

  async one(db: DataSource | EntityManager, params: unknown[]): Promise<T | null> {
    return (await this.all(db, params))[0] ?? null;
  }
}
