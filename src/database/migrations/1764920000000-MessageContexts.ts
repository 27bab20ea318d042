import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/** Where each conversation's in-context window starts, and its compaction summary (reset, summarize). */
export class MessageContexts1764920000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'message_contexts',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'conversation_key', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'start_seq', type: 'bigint' },
          { name: 'summary', type: 'text', isNullable: true },
          { name: 'version', type: 'integer' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('message_contexts');
  }
}
