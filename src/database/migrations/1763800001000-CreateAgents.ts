import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

export class CreateAgents1763800001000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'agents',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'name', type: 'varchar', length: '200' },
          { name: 'system', type: 'text' },
          { name: 'description', type: 'text', isNullable: true },
          { name: 'tools', type: 'text' },
          { name: 'tool_rules', type: 'text' },
          { name: 'blocks', type: 'text' },
          { name: 'llm_config', type: 'text' },
          { name: 'tags', type: 'text' },
          { name: 'metadata', type: 'text', isNullable: true },
          { name: 'tool_executor', type: 'text' },
          { name: 'model_script', type: 'text', isNullable: true },
          { name: 'max_steps', type: 'integer', isNullable: true },
          { name: 'last_stop_reason', type: 'varchar', length: '64', isNullable: true },
          { name: 'source', type: 'varchar', length: '16' },
          { name: 'source_hash', type: 'varchar', length: '64', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'agents',
      new TableIndex({
        name: 'idx_agents_tenant_created',
        columnNames: ['tenant_id', 'created_at'],
      }),
    );
    await q.createIndex(
      'agents',
      new TableIndex({ name: 'idx_agents_tenant_name', columnNames: ['tenant_id', 'name'] }),
    );
    // One row per (agent, tag), so tag filters are plain SQL on both databases.
    await q.createTable(
      new Table({
        name: 'agent_tags',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tag', type: 'varchar', length: '200', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
        ],
      }),
    );
    await q.createIndex(
      'agent_tags',
      new TableIndex({ name: 'idx_agent_tags_tenant_tag', columnNames: ['tenant_id', 'tag'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('agent_tags');
    await q.dropTable('agents');
  }
}
