import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * One agent per name among the agents loaded from files (several instances booting at once upsert the
 * same files). Agents created over the API may still share names, as in Letta. Duplicates that earlier
 * racing boots left behind are kept, as API agents (their history stays); the oldest stays the file's.
 */
export class UniqueFileAgentNames1764500001000 implements MigrationInterface {
  name = 'UniqueFileAgentNames1764500001000';

  async up(q: QueryRunner): Promise<void> {
    const agents = sqlTable((q.connection.options as { schema?: string }).schema, 'agents');
    await q.query(
      `UPDATE ${agents} SET source = 'api' WHERE source = 'file' AND EXISTS (
         SELECT 1 FROM ${agents} o WHERE o.source = 'file' AND o.tenant_id = ${agents}.tenant_id
           AND o.name = ${agents}.name
           AND (o.created_at < ${agents}.created_at OR (o.created_at = ${agents}.created_at AND o.id < ${agents}.id)))`,
    );
    await q.createIndex(
      'agents',
      new TableIndex({
        name: 'idx_agents_file_name',
        columnNames: ['tenant_id', 'name'],
        isUnique: true,
        where: `source = 'file'`,
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('agents', 'idx_agents_file_name');
  }
}
