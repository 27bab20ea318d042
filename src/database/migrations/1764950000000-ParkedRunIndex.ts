import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * The agent's parked run (every message asks for it): without this index the lookup walked all of the
 * agent's runs, so a step cost more the more runs the agent had. Holds only runs parked and not continued.
 */
export class ParkedRunIndex1764950000000 implements MigrationInterface {
  name = 'ParkedRunIndex1764950000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createIndex(
      'runs',
      new TableIndex({
        name: 'idx_runs_parked',
        columnNames: ['tenant_id', 'agent_id', 'created_at'],
        where: 'parked IS NOT NULL AND continued_by IS NULL',
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('runs', 'idx_runs_parked');
  }
}
