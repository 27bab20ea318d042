import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Letta's block `hidden` (null: never set): hidden blocks are left out of the blocks list. A plain ALTER
 * TABLE, which SQLite does in place: rebuilding the table (TypeORM's addColumn) would drop its quota
 * triggers.
 */
export class BlockHidden1765270000000 implements MigrationInterface {
  name = 'BlockHidden1765270000000';

  async up(q: QueryRunner): Promise<void> {
    const blocks = sqlTable((q.connection.options as { schema?: string }).schema, 'blocks');
    await q.query(`ALTER TABLE ${blocks} ADD COLUMN hidden boolean NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    const blocks = sqlTable((q.connection.options as { schema?: string }).schema, 'blocks');
    await q.query(`ALTER TABLE ${blocks} DROP COLUMN hidden`);
  }
}
