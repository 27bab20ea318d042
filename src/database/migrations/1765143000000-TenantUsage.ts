import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * The tables whose rows count against a tenant's quota (`quotas.*`), and which of their rows count:
 * `api_only` leaves out what the operator's files declare (file agents, file and MCP tools, file MCP
 * servers). A later migration that rebuilds one of these tables on SQLite (TypeORM's addColumn does) must
 * create its triggers again (`usageTriggerSql`); test/e2e/security/quotas.e2e-spec.ts checks every one.
 */
export const COUNTED_TABLES: { table: string; quota: string; api_only: boolean }[] = [
  { table: 'agents', quota: 'agents', api_only: true },
  { table: 'tools', quota: 'tools', api_only: true },
  { table: 'blocks', quota: 'blocks', api_only: false },
  { table: 'archives', quota: 'archives', api_only: false },
  { table: 'passages', quota: 'passages', api_only: false },
  { table: 'conversations', quota: 'conversations', api_only: false },
  { table: 'identities', quota: 'identities', api_only: false },
  { table: 'mcp_servers', quota: 'mcp_servers', api_only: true },
  { table: 'webhooks', quota: 'webhooks', api_only: false },
  { table: 'tenant_secrets', quota: 'secrets', api_only: false },
];

/**
 * What each tenant stores, counted by the database itself: triggers on each counted table add its
 * inserted rows and take away its deleted ones, whichever code path (an agent's deletion dropping its
 * blocks and archive, an import, a tool of the model) wrote them. A create checks the count in its own
 * transaction after its insert, where the counter row is locked, so two creates at a quota's limit never
 * both pass (PostgreSQL) and a create reads one row instead of counting the table.
 */
export class TenantUsage1765143000000 implements MigrationInterface {
  name = 'TenantUsage1765143000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'tenant_usage',
        columns: [
          { name: 'tenant_id', type: 'varchar', length: '200', isPrimary: true },
          { name: 'quota', type: 'varchar', length: '32', isPrimary: true },
          { name: 'used', type: 'integer', default: 0 },
        ],
      }),
    );
    const schema = (q.connection.options as { schema?: string }).schema;
    const usage = sqlTable(schema, 'tenant_usage');
    for (const c of COUNTED_TABLES) {
      await q.query(
        `INSERT INTO ${usage} (tenant_id, quota, used) SELECT tenant_id, '${c.quota}', COUNT(*) FROM ${sqlTable(schema, c.table)}${c.api_only ? ` WHERE source = 'api'` : ''} GROUP BY tenant_id`,
      );
      for (const sql of usageTriggerSql(q, c)) await q.query(sql);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    const pg = q.connection.options.type === 'postgres';
    const schema = (q.connection.options as { schema?: string }).schema;
    for (const c of COUNTED_TABLES) {
      for (const trigger of usageTriggerNames(c))
        await q.query(
          pg
            ? `DROP TRIGGER IF EXISTS ${trigger} ON ${sqlTable(schema, c.table)}`
            : `DROP TRIGGER IF EXISTS ${trigger}`,
        );
      if (pg)
        for (const fn of [`usage_${c.table}`, `usage_${c.table}_source`])
          await q.query(`DROP FUNCTION IF EXISTS ${sqlTable(schema, fn)}()`);
    }
    await q.dropTable('tenant_usage');
  }
}

/** The triggers that keep a counted table's counts: `_source` where only the tenant's own rows count. */
export function usageTriggerNames(c: { table: string; api_only: boolean }): string[] {
  const names = [`usage_${c.table}_insert`, `usage_${c.table}_delete`];
  return c.api_only ? [...names, `usage_${c.table}_source`] : names;
}

/**
 * The statements that make `c.table`'s inserts and deletes move its tenants' counts (and, for `api_only`,
 * a row whose source changes: the loader of config/agents adopts an API agent of the same name). SQLite: a
 * trigger per row. PostgreSQL: a trigger per statement over its transition table, one counter update per
 * tenant (a thousand passages deleted with their archive are one update, not a thousand of the same row).
 */
export function usageTriggerSql(
  q: QueryRunner,
  c: { table: string; quota: string; api_only: boolean },
): string[] {
  const schema = (q.connection.options as { schema?: string }).schema;
  if (q.connection.options.type !== 'postgres') {
    const when = (row: string) => (c.api_only ? ` WHEN ${row}.source = 'api'` : '');
    const add = (row: string, n: string) =>
      `INSERT INTO tenant_usage (tenant_id, quota, used) VALUES (${row}.tenant_id, '${c.quota}', ${n})
          ON CONFLICT (tenant_id, quota) DO UPDATE SET used = used + excluded.used;`;
    return [
      `CREATE TRIGGER usage_${c.table}_insert AFTER INSERT ON ${c.table}${when('NEW')} BEGIN
        ${add('NEW', '1')} END`,
      `CREATE TRIGGER usage_${c.table}_delete AFTER DELETE ON ${c.table}${when('OLD')} BEGIN
        ${add('OLD', '-1')} END`,
      ...(c.api_only
        ? [
            `CREATE TRIGGER usage_${c.table}_source AFTER UPDATE OF source ON ${c.table}
              WHEN (OLD.source = 'api') <> (NEW.source = 'api') BEGIN
              ${add('NEW', "CASE WHEN NEW.source = 'api' THEN 1 ELSE -1 END")} END`,
          ]
        : []),
    ];
  }
  const usage = sqlTable(schema, 'tenant_usage');
  const table = sqlTable(schema, c.table);
  const fn = sqlTable(schema, `usage_${c.table}`);
  const fnSource = sqlTable(schema, `usage_${c.table}_source`);
  const only = c.api_only ? ` WHERE source = 'api'` : '';
  return [
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO ${usage} AS u (tenant_id, quota, used)
          SELECT tenant_id, '${c.quota}', COUNT(*) FROM new_rows${only} GROUP BY tenant_id
          ON CONFLICT (tenant_id, quota) DO UPDATE SET used = u.used + excluded.used;
      ELSE
        UPDATE ${usage} AS u SET used = u.used - d.n
          FROM (SELECT tenant_id, COUNT(*) AS n FROM old_rows${only} GROUP BY tenant_id) AS d
          WHERE u.tenant_id = d.tenant_id AND u.quota = '${c.quota}';
      END IF;
      RETURN NULL;
    END $$`,
    `CREATE TRIGGER usage_${c.table}_insert AFTER INSERT ON ${table}
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
    `CREATE TRIGGER usage_${c.table}_delete AFTER DELETE ON ${table}
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
    ...(c.api_only
      ? [
          // per row (a statement trigger on UPDATE OF a column cannot see its rows): rare, and the
          // WHEN keeps every other update of the table (a run's end updates its agent) from calling it
          `CREATE FUNCTION ${fnSource}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO ${usage} AS u (tenant_id, quota, used)
              VALUES (NEW.tenant_id, '${c.quota}', CASE WHEN NEW.source = 'api' THEN 1 ELSE -1 END)
              ON CONFLICT (tenant_id, quota) DO UPDATE SET used = u.used + excluded.used;
            RETURN NULL;
          END $$`,
          `CREATE TRIGGER usage_${c.table}_source AFTER UPDATE OF source ON ${table} FOR EACH ROW
            WHEN ((OLD.source = 'api') IS DISTINCT FROM (NEW.source = 'api')) EXECUTE FUNCTION ${fnSource}()`,
        ]
      : []),
  ];
}
