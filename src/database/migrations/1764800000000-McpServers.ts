import { MigrationInterface, QueryRunner, Table, TableColumn, TableIndex } from 'typeorm';

/** MCP servers per tenant (global ones from config/mcp under tenant `*`), and the tools' link to them. */
export class McpServers1764800000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'mcp_servers',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'server_name', type: 'varchar', length: '64' },
          { name: 'config', type: 'text' },
          { name: 'tool_safety', type: 'text' },
          { name: 'source', type: 'varchar', length: '16' },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'mcp_servers',
      new TableIndex({
        name: 'idx_mcp_servers_tenant_name',
        columnNames: ['tenant_id', 'server_name'],
        isUnique: true,
      }),
    );
    await q.addColumn('tools', new TableColumn({ name: 'mcp', type: 'text', isNullable: true }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM tools WHERE kind = 'mcp'`);
    await q.dropColumn('tools', 'mcp');
    await q.dropTable('mcp_servers');
  }
}
