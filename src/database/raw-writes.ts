import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { Driver } from 'typeorm/driver/Driver';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { EntityMetadata } from 'typeorm/metadata/EntityMetadata';
import { sqlTable } from './sql-names';

/**
 * Writes on the hot path (a step's rows, a run's state) as plain bound statements rather than through
 * TypeORM's query builders, which were a large share of a step's CPU time and write numbers into the SQL
 * text as literals (every statement carrying a timestamp was new to SQLite's statement cache). Values go
 * through the driver's own conversion (JSON columns, transformers), so rows read back as TypeORM wrote them.
 */

/** One multi-row INSERT (or upsert, on the `conflictPaths` properties) of rows of one entity. */
export async function insertRows(
  em: EntityManager,
  entity: EntityTarget<ObjectLiteral>,
  rows: ObjectLiteral[],
  conflictPaths?: string[],
): Promise<void> {
  const { driver } = em.connection;
  const meta = em.connection.getMetadata(entity);
  // PostgreSQL refuses an upsert that meets one key twice (a group commit merges several jobs' rows):
  // the last row of a key is the newest write, so it alone goes in, as the rows one after another would
  if (conflictPaths) rows = lastPerKey(rows, conflictPaths);
  const columns: ColumnMetadata[] = [];
  let shape = `${rows.length}|${conflictPaths?.join(',') ?? ''}|`;
  for (let i = 0; i < meta.columns.length; i++) {
    const c = meta.columns[i];
    let given = false;
    for (const r of rows) {
      if (r[c.propertyName] === undefined) continue;
      given = true;
      break;
    }
    if (!given) continue; // the column's default, as the query builder does for a value never given
    // a value missing in some rows only would need the column's default there: left to TypeORM
    if (c.default !== undefined && rows.some((r) => r[c.propertyName] === undefined)) {
      await em
        .createQueryBuilder()
        .insert()
        .into(entity)
        .values(rows)
        .updateEntity(false)
        .execute();
      return;
    }
    columns.push(c);
    shape += `${i},`;
  }
  const params: unknown[] = [];
  for (const r of rows)
    for (const c of columns) params.push(bindable(driver, c, r[c.propertyName]));
  let shapes = insertSql.get(meta);
  if (!shapes) insertSql.set(meta, (shapes = new Map<string, string>()));
  let sql = shapes.get(shape);
  if (sql === undefined) {
    if (shapes.size >= MAX_SHAPES) shapes.clear();
    shapes.set(shape, (sql = insertText(meta, driver, columns, rows.length, conflictPaths)));
  }
  await em.query(sql, params);
}

/**
 * The SQL text of each insert shape (columns, row count, conflict keys) per entity, built once: the group
 * commit's inserts take a handful of shapes, and building the text (a parameter mark per value) was a
 * large share of the bytes a step allocated. Bounded all the same (a shape per row count).
 */
const insertSql = new WeakMap<EntityMetadata, Map<string, string>>();
const MAX_SHAPES = 1024;

function insertText(
  meta: EntityMetadata,
  driver: Driver,
  columns: ColumnMetadata[],
  rowCount: number,
  conflictPaths: string[] | undefined,
): string {
  const postgres = driver.options.type === 'postgres';
  const tuples: string[] = [];
  let n = 0;
  for (let r = 0; r < rowCount; r++)
    tuples.push(`(${columns.map(() => (postgres ? `$${++n}` : '?')).join(', ')})`);
  const names = columns.map((c) => driver.escape(c.databaseName));
  const table = sqlTable(meta.schema, meta.tableName);
  let sql = `INSERT INTO ${table} (${names.join(', ')}) VALUES ${tuples.join(', ')}`;
  if (conflictPaths) {
    const keys = conflictPaths.map((p) => meta.findColumnWithPropertyName(p)?.databaseName ?? p);
    const set = columns
      .filter((c) => !keys.includes(c.databaseName))
      .map((c) => `${driver.escape(c.databaseName)} = EXCLUDED.${driver.escape(c.databaseName)}`);
    sql += ` ON CONFLICT (${keys.map((k) => driver.escape(k)).join(', ')}) DO UPDATE SET ${set.join(', ')}`;
  }
  return sql;
}

function lastPerKey(rows: ObjectLiteral[], keys: string[]): ObjectLiteral[] {
  if (rows.length < 2) return rows;
  const byKey = new Map<string, ObjectLiteral>();
  for (const r of rows) {
    const key = JSON.stringify(keys.map((k) => r[k] as unknown));
    byKey.delete(key); // re-inserted: the map keeps the order of the last writes
    byKey.set(key, r);
  }
  return byKey.size === rows.length ? rows : [...byKey.values()];
}

/**
 * `UPDATE <entity> SET <values> WHERE <where>` (property names; a null in `where` is IS NULL) in the unit
 * of work `em` belongs to; answers how many rows changed.
 */
export async function updateWhere(
  em: EntityManager,
  entity: EntityTarget<ObjectLiteral>,
  where: ObjectLiteral,
  values: ObjectLiteral,
): Promise<number> {
  const s = new Statement(em, entity);
  const set = Object.entries(values)
    .filter(([, v]) => v !== undefined)
    .map(([p, v]) => s.bind(p, v));
  return s.run(`UPDATE ${s.table} SET ${set.join(', ')} WHERE ${s.where(where)}`);
}

/** `DELETE FROM <entity> WHERE <where>` (as `updateWhere`'s); answers how many rows went. */
export async function deleteWhere(
  em: EntityManager,
  entity: EntityTarget<ObjectLiteral>,
  where: ObjectLiteral,
): Promise<number> {
  const s = new Statement(em, entity);
  return s.run(`DELETE FROM ${s.table} WHERE ${s.where(where)}`);
}

/** One statement's bound parameters, by property name. */
class Statement {
  readonly params: unknown[] = [];
  readonly table: string;
  private readonly meta: EntityMetadata;
  private readonly postgres: boolean;

  constructor(
    private readonly em: EntityManager,
    entity: EntityTarget<ObjectLiteral>,
  ) {
    this.meta = em.connection.getMetadata(entity);
    this.postgres = em.connection.driver.options.type === 'postgres';
    this.table = sqlTable(this.meta.schema, this.meta.tableName);
  }

  /** `"column" = <parameter>` */
  bind(property: string, value: unknown): string {
    const c = this.column(property);
    this.params.push(bindable(this.em.connection.driver, c, value));
    return `${this.name(c)} = ${this.postgres ? `$${this.params.length}` : '?'}`;
  }

  where(where: ObjectLiteral): string {
    return Object.entries(where)
      .map(([p, v]) => (v === null ? `${this.name(this.column(p))} IS NULL` : this.bind(p, v)))
      .join(' AND ');
  }

  async run(sql: string): Promise<number> {
    if (!this.em.queryRunner) throw new Error('raw writes run inside a unit of work');
    const res = await this.em.queryRunner.query(sql, this.params, true);
    return res.affected ?? 0;
  }

  private column(p: string): ColumnMetadata {
    const c = this.meta.findColumnWithPropertyName(p);
    if (!c) throw new Error(`${this.meta.name} has no column ${p}`);
    return c;
  }

  private name(c: ColumnMetadata): string {
    return this.em.connection.driver.escape(c.databaseName);
  }
}

/**
 * A value as the driver stores it. On SQLite integers are bound as integers: a JavaScript number binds
 * as a REAL, which a text column would store as "7.0".
 */
function bindable(driver: Driver, c: ColumnMetadata, value: unknown): unknown {
  const v: unknown = driver.preparePersistentValue(value, c);
  if (v === undefined) return null;
  if (driver.options.type !== 'postgres' && typeof v === 'number' && Number.isInteger(v))
    return BigInt(v);
  return v;
}
