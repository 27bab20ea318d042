import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * A tool_call_id may have several consent requests: a provider that gives every response the same ids
 * (`call_0`) makes a new call under an old call's id, which must be asked about afresh, not answered by
 * the old call's decision. A parked call names its own request by id; the index stays, not unique.
 */
export class ConsentRequestsPerCall1765110003000 implements MigrationInterface {
  name = 'ConsentRequestsPerCall1765110003000';

  async up(q: QueryRunner): Promise<void> {
    await q.dropIndex('consent_requests', 'idx_consent_requests_call');
    await q.createIndex('consent_requests', index(false));
  }

  async down(q: QueryRunner): Promise<void> {
    // one request per tool_call_id again: the older requests of a reused id take their own id as theirs
    const requests = sqlTable(
      (q.connection.options as { schema?: string }).schema,
      'consent_requests',
    );
    await q.query(
      `UPDATE ${requests} SET tool_call_id = id WHERE EXISTS (
         SELECT 1 FROM ${requests} n WHERE n.tenant_id = ${requests}.tenant_id
           AND n.agent_id = ${requests}.agent_id AND n.tool_call_id = ${requests}.tool_call_id
           AND (n.created_at > ${requests}.created_at
             OR (n.created_at = ${requests}.created_at AND n.id > ${requests}.id)))`,
    );
    await q.dropIndex('consent_requests', 'idx_consent_requests_call');
    await q.createIndex('consent_requests', index(true));
  }
}

const index = (isUnique: boolean) =>
  new TableIndex({
    name: 'idx_consent_requests_call',
    columnNames: ['tenant_id', 'agent_id', 'tool_call_id'],
    isUnique,
  });
