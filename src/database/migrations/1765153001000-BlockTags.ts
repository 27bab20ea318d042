import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Letta's block `tags`, a JSON list (null: none). A plain ALTER TABLE, which SQLite does in place:
 * rebuilding the table (TypeORM's addColumn) would drop its quota triggers.
 */
export class BlockTags1765153001000 implements MigrationInterface {
  name = 'BlockTags1765153001000';

  async up(q: QueryRunner): Promise<void> {
    const blocks = sqlTable((q.connection.options as { schema?: string }).schema, 'blocks');
    await q.query(`ALTER TABLE ${blocks} ADD COLUMN tags text NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    const blocks = sqlTable((q.connection.options as { schema?: string }).schema, 'blocks');
    await q.query(`ALTER TABLE ${blocks} DROP COLUMN tags`);
  }
}
