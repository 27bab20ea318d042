import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

export class CreateTools1763800000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'tools',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'name', type: 'varchar', length: '64' },
          { name: 'description', type: 'text' },
          { name: 'parameters', type: 'text' },
          { name: 'safety', type: 'varchar', length: '32' },
          { name: 'kind', type: 'varchar', length: '32' },
          { name: 'http', type: 'text', isNullable: true },
          { name: 'source', type: 'varchar', length: '16' },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'tools',
      new TableIndex({
        name: 'idx_tools_tenant_name',
        columnNames: ['tenant_id', 'name'],
        isUnique: true,
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('tools');
  }
}
