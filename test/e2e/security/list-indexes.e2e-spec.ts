import { DataSource } from 'typeorm';
import { startApp, TestApp } from '../../support/app-harness';

/**
 * QA (exhaustion): `GET /v1/messages/?limit=1` took 2 s over a 2 GB tenant: the tenant-wide lists order
 * by (created_at, id) filtered by tenant_id, and no index had that shape (SCAN + TEMP B-TREE: every page
 * sorted the tenant's whole history). Each such list now reads an index in its order and stops at the limit.
 */
describe('security: tenant-wide lists read an index in their order', () => {
  let t: TestApp;
  let ds: DataSource;
  const onPostgres = !!process.env.TEST_DATABASE_URL;

  beforeAll(async () => {
    t = await startApp({});
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const lists: [table: string, index: string][] = [
    ['messages', 'idx_messages_tenant_time'],
    ['runs', 'idx_runs_tenant_time'],
    ['steps', 'idx_steps_tenant_time'],
    ['consent_requests', 'idx_consent_requests_tenant_time'],
    ['consent_grants', 'idx_consent_grants_tenant_time'],
  ];

  it.each(lists)('%s: the index exists (migration)', async (table, index) => {
    const rows: unknown[] = onPostgres
      ? await ds.query(
          'SELECT indexname FROM pg_indexes WHERE schemaname = $3 AND tablename = $1 AND indexname = $2',
          [table, index, (ds.options as { schema?: string }).schema ?? 'public'],
        )
      : await ds.query(
          `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?`,
          [table, index],
        );
    expect(rows).toHaveLength(1);
  });

  (onPostgres ? it.skip : it).each(lists)(
    '%s: a page newest first (limit 1) walks the index, no sort of the whole history (SQLite plan)',
    async (table, index) => {
      for (const dir of ['DESC', 'ASC']) {
        const plan: { detail: string }[] = await ds.query(
          `EXPLAIN QUERY PLAN SELECT * FROM ${table} WHERE tenant_id = ? ORDER BY created_at ${dir}, id ${dir} LIMIT 1`,
          ['tenant-x'],
        );
        const text = plan.map((p) => p.detail).join(' | ');
        expect(text).toContain(index);
        expect(text).not.toContain('TEMP B-TREE');
      }
    },
  );
});
