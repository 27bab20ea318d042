import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * The tables whose bytes count against `quotas.stored_bytes`, and their counted columns (as
 * src/core/limits/stored-bytes.ts measures them; test/e2e/security/stored-bytes.e2e-spec.ts checks the two
 * agree). A later migration that rebuilds one of these tables on SQLite (TypeORM's addColumn does) must
 * create its triggers again (`bytesTriggerSql`), as a change of the columns must recount (as `up` does).
 */
export const BYTES_COUNTED: { table: string; columns: string[] }[] = [
  { table: 'messages', columns: ['payload'] },
  { table: 'runs', columns: ['input'] },
  { table: 'passages', columns: ['text', 'tags', 'metadata'] },
  { table: 'blocks', columns: ['label', 'value', 'description', 'metadata', 'tags'] },
  {
    table: 'agents',
    columns: [
      'system',
      'description',
      'tools',
      'tool_rules',
      'llm_config',
      'tags',
      'metadata',
      'tool_executor',
      'model_script',
      'budgets',
      'client_tools',
      'embedding_config',
    ],
  },
];

/**
 * PostgreSQL: each tenant's bytes are kept in this many rows (stripes), a transaction adding to the one of
 * its connection (`pg_backend_pid()`), so the steps of one tenant's agents on several instances do not
 * wait for each other's commits on one row; the tenant's bytes are the stripes' sum. SQLite: stripe 0.
 */
export const BYTES_STRIPES = 16;

/**
 * What each tenant stores in bytes, counted by the database (as TenantUsage counts rows): triggers on each
 * counted table add an insert's bytes, take away a delete's and move by an update's difference, whichever
 * code path wrote them. The triggers are made before the backfill, in its transaction: on PostgreSQL they
 * lock their tables, so no row is written between the count and the triggers (an instance of the previous
 * version writing at that moment waits for the migration's commit, and is counted by the triggers).
 */
export class StoredBytes1765190000000 implements MigrationInterface {
  name = 'StoredBytes1765190000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'tenant_bytes',
        columns: [
          { name: 'tenant_id', type: 'varchar', length: '200', isPrimary: true },
          { name: 'stripe', type: 'integer', isPrimary: true },
          { name: 'used', type: 'bigint', default: 0 },
        ],
      }),
    );
    for (const c of BYTES_COUNTED) for (const sql of bytesTriggerSql(q, c)) await q.query(sql);
    const schema = (q.connection.options as { schema?: string }).schema;
    const rows = BYTES_COUNTED.map(
      (c) => `SELECT tenant_id, ${rowBytes('', c.columns)} AS n FROM ${sqlTable(schema, c.table)}`,
    );
    await q.query(
      `INSERT INTO ${sqlTable(schema, 'tenant_bytes')} (tenant_id, stripe, used)
        SELECT tenant_id, 0, SUM(n) FROM (${rows.join(' UNION ALL ')}) AS counted GROUP BY tenant_id`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    const pg = q.connection.options.type === 'postgres';
    const schema = (q.connection.options as { schema?: string }).schema;
    for (const c of BYTES_COUNTED) {
      for (const trigger of bytesTriggerNames(c))
        await q.query(
          pg
            ? `DROP TRIGGER IF EXISTS ${trigger} ON ${sqlTable(schema, c.table)}`
            : `DROP TRIGGER IF EXISTS ${trigger}`,
        );
      if (pg)
        for (const fn of [`bytes_${c.table}`, `bytes_${c.table}_update`])
          await q.query(`DROP FUNCTION IF EXISTS ${sqlTable(schema, fn)}()`);
    }
    await q.dropTable('tenant_bytes');
  }
}

/** The triggers that keep a counted table's bytes. */
export function bytesTriggerNames(c: { table: string }): string[] {
  return [`bytes_${c.table}_insert`, `bytes_${c.table}_delete`, `bytes_${c.table}_update`];
}

/** A row's counted bytes in SQL (`octet_length`, on both databases); `row`: `NEW.`, `OLD.` or ''. */
function rowBytes(row: string, columns: string[]): string {
  return columns.map((col) => `COALESCE(octet_length(${row}"${col}"), 0)`).join(' + ');
}

/**
 * The statements that make `c.table`'s writes move its tenants' bytes. SQLite: a trigger per row.
 * PostgreSQL: inserts and deletes by statement over their transition tables, one upsert per tenant (an
 * agent's thousand messages deleted are one, not a thousand), in tenant order (two transactions adding to
 * the same stripes of several tenants lock them in one order); updates by row, only of counted columns and
 * when their size changed (a run's end, which updates its row, calls nothing).
 */
export function bytesTriggerSql(q: QueryRunner, c: { table: string; columns: string[] }): string[] {
  const schema = (q.connection.options as { schema?: string }).schema;
  const cols = c.columns.map((col) => `"${col}"`).join(', ');
  const changed = `${rowBytes('NEW.', c.columns)} <> ${rowBytes('OLD.', c.columns)}`;
  if (q.connection.options.type !== 'postgres') {
    const add = (row: 'NEW' | 'OLD', n: string) =>
      `INSERT INTO tenant_bytes (tenant_id, stripe, used) VALUES (${row}.tenant_id, 0, ${n})
          ON CONFLICT (tenant_id, stripe) DO UPDATE SET used = used + excluded.used;`;
    return [
      `CREATE TRIGGER bytes_${c.table}_insert AFTER INSERT ON ${c.table} BEGIN
        ${add('NEW', rowBytes('NEW.', c.columns))} END`,
      `CREATE TRIGGER bytes_${c.table}_delete AFTER DELETE ON ${c.table} BEGIN
        ${add('OLD', `-(${rowBytes('OLD.', c.columns)})`)} END`,
      `CREATE TRIGGER bytes_${c.table}_update AFTER UPDATE OF ${cols} ON ${c.table} WHEN ${changed} BEGIN
        ${add('NEW', `(${rowBytes('NEW.', c.columns)}) - (${rowBytes('OLD.', c.columns)})`)} END`,
    ];
  }
  const bytes = sqlTable(schema, 'tenant_bytes');
  const table = sqlTable(schema, c.table);
  const fn = sqlTable(schema, `bytes_${c.table}`);
  const fnUpdate = sqlTable(schema, `bytes_${c.table}_update`);
  const stripe = `pg_backend_pid() % ${BYTES_STRIPES}`;
  const upsert = `ON CONFLICT (tenant_id, stripe) DO UPDATE SET used = b.used + excluded.used`;
  return [
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO ${bytes} AS b (tenant_id, stripe, used)
          SELECT tenant_id, ${stripe}, SUM(${rowBytes('', c.columns)}) FROM new_rows
          GROUP BY tenant_id ORDER BY tenant_id ${upsert};
      ELSE
        INSERT INTO ${bytes} AS b (tenant_id, stripe, used)
          SELECT tenant_id, ${stripe}, -SUM(${rowBytes('', c.columns)}) FROM old_rows
          GROUP BY tenant_id ORDER BY tenant_id ${upsert};
      END IF;
      RETURN NULL;
    END $$`,
    `CREATE TRIGGER bytes_${c.table}_insert AFTER INSERT ON ${table}
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
    `CREATE TRIGGER bytes_${c.table}_delete AFTER DELETE ON ${table}
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
    `CREATE FUNCTION ${fnUpdate}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${bytes} AS b (tenant_id, stripe, used)
        VALUES (NEW.tenant_id, ${stripe}, (${rowBytes('NEW.', c.columns)}) - (${rowBytes('OLD.', c.columns)})) ${upsert};
      RETURN NULL;
    END $$`,
    `CREATE TRIGGER bytes_${c.table}_update AFTER UPDATE OF ${cols} ON ${table} FOR EACH ROW
      WHEN (${changed}) EXECUTE FUNCTION ${fnUpdate}()`,
  ];
}
