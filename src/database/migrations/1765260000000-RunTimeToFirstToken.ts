import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Letta's run `ttft_ns`: the time from the run's start to its first model answer's first chunk. A plain
 * ALTER TABLE, which SQLite does in place: rebuilding the table (TypeORM's addColumn) would drop its quota
 * triggers.
 */
export class RunTimeToFirstToken1765260000000 implements MigrationInterface {
  name = 'RunTimeToFirstToken1765260000000';

  async up(q: QueryRunner): Promise<void> {
    const runs = sqlTable((q.connection.options as { schema?: string }).schema, 'runs');
    await q.query(`ALTER TABLE ${runs} ADD COLUMN ttft_ns bigint NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    const runs = sqlTable((q.connection.options as { schema?: string }).schema, 'runs');
    await q.query(`ALTER TABLE ${runs} DROP COLUMN ttft_ns`);
  }
}
