import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Letta's agent_type, stored per agent. Agents made before it behave as Letta's memgpt_agent
 * (send_message, core_memory_*, heartbeats), so that is what they are. A plain ALTER TABLE, which
 * SQLite does in place (TypeORM's addColumn would rebuild the table).
 */
export class AgentTypes1765050000000 implements MigrationInterface {
  name = 'AgentTypes1765050000000';

  async up(q: QueryRunner): Promise<void> {
    const schema = (q.connection.options as { schema?: string }).schema;
    await q.query(
      `ALTER TABLE ${sqlTable(schema, 'agents')} ADD COLUMN agent_type varchar(32) NOT NULL DEFAULT 'memgpt_agent'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    const schema = (q.connection.options as { schema?: string }).schema;
    await q.query(`ALTER TABLE ${sqlTable(schema, 'agents')} DROP COLUMN agent_type`);
  }
}
