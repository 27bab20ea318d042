import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Letta's identities and the agents they are attached to (src/identities). */
export class Identities1764910000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'identities',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'identifier_key', type: 'varchar', length: '200' },
          { name: 'name', type: 'varchar', length: '200' },
          { name: 'identity_type', type: 'varchar', length: '16' },
          { name: 'properties', type: 'text' },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'identities',
      new TableIndex({
        name: 'idx_identities_tenant_key',
        columnNames: ['tenant_id', 'identifier_key'],
        isUnique: true,
      }),
    );
    await q.createIndex(
      'identities',
      new TableIndex({
        name: 'idx_identities_tenant_created',
        columnNames: ['tenant_id', 'created_at'],
      }),
    );
    await q.createTable(
      new Table({
        name: 'agent_identities',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'identity_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
        ],
      }),
    );
    await q.createIndex(
      'agent_identities',
      new TableIndex({ name: 'idx_agent_identities_identity', columnNames: ['identity_id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('agent_identities');
    await q.dropTable('identities');
  }
}
