import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * Tenant-wide lists (`GET /v1/messages/`, `/v1/runs/`, `/v1/steps/`, `/v1/consent/requests`, the tenant's
 * grants) order by (created_at, id) filtered by tenant_id. Without these indexes each page sorted the
 * tenant's whole history (SCAN + TEMP B-TREE: 2 s for limit=1 over 2 GB of messages); with them a page
 * reads its rows in index order and stops at the limit.
 */
const INDEXES: [table: string, name: string, columns: string[]][] = [
  ['messages', 'idx_messages_tenant_time', ['tenant_id', 'created_at', 'id']],
  ['runs', 'idx_runs_tenant_time', ['tenant_id', 'created_at', 'id']],
  ['steps', 'idx_steps_tenant_time', ['tenant_id', 'created_at', 'id']],
  ['consent_requests', 'idx_consent_requests_tenant_time', ['tenant_id', 'created_at', 'id']],
  ['consent_grants', 'idx_consent_grants_tenant_time', ['tenant_id', 'created_at', 'id']],
];

export class TenantListIndexes1765110004000 implements MigrationInterface {
  name = 'TenantListIndexes1765110004000';

  async up(q: QueryRunner): Promise<void> {
    for (const [table, name, columnNames] of INDEXES)
      await q.createIndex(table, new TableIndex({ name, columnNames }));
  }

  async down(q: QueryRunner): Promise<void> {
    for (const [table, name] of [...INDEXES].reverse()) await q.dropIndex(table, name);
  }
}
