import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Letta's `default_requires_approval` of a tool (null: never set). A plain ALTER TABLE, which SQLite does
 * in place: rebuilding the table (TypeORM's addColumn) would drop its quota triggers.
 */
export class ToolDefaultRequiresApproval1765153000000 implements MigrationInterface {
  name = 'ToolDefaultRequiresApproval1765153000000';

  async up(q: QueryRunner): Promise<void> {
    const tools = sqlTable((q.connection.options as { schema?: string }).schema, 'tools');
    await q.query(`ALTER TABLE ${tools} ADD COLUMN default_requires_approval boolean NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    const tools = sqlTable((q.connection.options as { schema?: string }).schema, 'tools');
    await q.query(`ALTER TABLE ${tools} DROP COLUMN default_requires_approval`);
  }
}
