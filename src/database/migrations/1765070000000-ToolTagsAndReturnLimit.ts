import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Letta's `tags` and `return_char_limit` of a tool (both null: none, and the default limit). */
export class ToolTagsAndReturnLimit1765070000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumns('tools', [
      new TableColumn({ name: 'tags', type: 'text', isNullable: true }),
      new TableColumn({ name: 'return_char_limit', type: 'integer', isNullable: true }),
    ]);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('tools', 'return_char_limit');
    await q.dropColumn('tools', 'tags');
  }
}
