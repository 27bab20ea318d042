import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/** Tenant secrets (encrypted at rest): tenant-wide (`owner` '') or an agent's (`owner` = agent id). */
export class TenantSecrets1764200000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'tenant_secrets',
        columns: [
          { name: 'tenant_id', type: 'varchar', length: '200', isPrimary: true },
          { name: 'owner', type: 'varchar', length: '64', isPrimary: true },
          { name: 'name', type: 'varchar', length: '128', isPrimary: true },
          { name: 'sealed', type: 'text' },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('tenant_secrets');
  }
}
