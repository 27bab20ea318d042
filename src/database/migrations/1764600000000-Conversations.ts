import { MigrationInterface, QueryRunner, Table, TableColumn, TableIndex } from 'typeorm';

/** Letta's conversations: separate histories of one agent; runs and messages name theirs (null = the default). */
export class Conversations1764600000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'conversations',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'agent_id', type: 'varchar', length: '64' },
          { name: 'summary', type: 'text', isNullable: true },
          { name: 'archived', type: 'boolean', default: false },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
          { name: 'last_message_at', type: 'bigint', isNullable: true },
        ],
      }),
    );
    await q.createIndex(
      'conversations',
      new TableIndex({
        name: 'idx_conversations_agent',
        columnNames: ['tenant_id', 'agent_id', 'created_at'],
      }),
    );
    for (const table of ['runs', 'messages']) {
      await q.addColumn(
        table,
        new TableColumn({
          name: 'conversation_id',
          type: 'varchar',
          length: '64',
          isNullable: true,
        }),
      );
    }
    await q.createIndex(
      'messages',
      new TableIndex({
        name: 'idx_messages_conversation',
        columnNames: ['agent_id', 'conversation_id', 'seq_id'],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('messages', 'idx_messages_conversation');
    for (const table of ['runs', 'messages']) await q.dropColumn(table, 'conversation_id');
    await q.dropIndex('conversations', 'idx_conversations_agent');
    await q.dropTable('conversations');
  }
}
