import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Letta's agent `timezone` (an IANA name), stored per agent. Agents made before it are in UTC, Letta's
 * default. A plain ALTER TABLE, which SQLite does in place (TypeORM's addColumn would rebuild the table).
 */
export class AgentTimezones1765110000000 implements MigrationInterface {
  name = 'AgentTimezones1765110000000';

  async up(q: QueryRunner): Promise<void> {
    const schema = (q.connection.options as { schema?: string }).schema;
    await q.query(
      `ALTER TABLE ${sqlTable(schema, 'agents')} ADD COLUMN timezone varchar(64) NOT NULL DEFAULT 'UTC'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    const schema = (q.connection.options as { schema?: string }).schema;
    await q.query(`ALTER TABLE ${sqlTable(schema, 'agents')} DROP COLUMN timezone`);
  }
}
