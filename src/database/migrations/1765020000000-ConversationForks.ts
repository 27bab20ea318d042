import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * Conversation forks (Letta's `conversations.fork`): the in-context messages a conversation shares with
 * the one it was forked from (JSON ranges of another conversation's messages, by seq), and forks
 * hidden from listings.
 */
export class ConversationForks1765020000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'message_contexts',
      new TableColumn({ name: 'inherited', type: 'text', isNullable: true }),
    );
    await q.addColumn(
      'conversations',
      new TableColumn({ name: 'hidden', type: 'boolean', default: false }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('conversations', 'hidden');
    await q.dropColumn('message_contexts', 'inherited');
  }
}
