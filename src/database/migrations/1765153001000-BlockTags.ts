import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Letta's block `tags`, a JSON list (null: none). */
export class BlockTags1765153001000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn('blocks', new TableColumn({ name: 'tags', type: 'text', isNullable: true }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('blocks', 'tags');
  }
}
