import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Consent requests, standing grants and the consent audit log (src/permissions). */
export class Permissions1763830000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'consent_requests',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'agent_id', type: 'varchar', length: '64' },
          { name: 'run_id', type: 'varchar', length: '64' },
          { name: 'batch_id', type: 'varchar', length: '64' },
          { name: 'tool_call_id', type: 'varchar', length: '200' },
          { name: 'tool_name', type: 'varchar', length: '200' },
          { name: 'arguments', type: 'text' },
          { name: 'scope', type: 'varchar', length: '200' },
          { name: 'reason', type: 'text' },
          { name: 'status', type: 'varchar', length: '16' },
          { name: 'decision', type: 'varchar', length: '32', isNullable: true },
          { name: 'decision_reason', type: 'text', isNullable: true },
          { name: 'decided_by', type: 'varchar', length: '200', isNullable: true },
          { name: 'channel', type: 'varchar', length: '16', isNullable: true },
          { name: 'decided_at', type: 'bigint', isNullable: true },
          { name: 'grant_id', type: 'varchar', length: '64', isNullable: true },
          { name: 'consumed_at', type: 'bigint', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'consent_requests',
      new TableIndex({
        name: 'idx_consent_requests_call',
        columnNames: ['tenant_id', 'agent_id', 'tool_call_id'],
        isUnique: true,
      }),
    );
    await q.createIndex(
      'consent_requests',
      new TableIndex({
        name: 'idx_consent_requests_status',
        columnNames: ['status', 'expires_at'],
      }),
    );

    await q.createTable(
      new Table({
        name: 'consent_grants',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'agent_id', type: 'varchar', length: '64' },
          { name: 'scope', type: 'varchar', length: '200' },
          { name: 'decision', type: 'varchar', length: '32' },
          { name: 'expires_at', type: 'bigint', isNullable: true },
          { name: 'arg_constraint', type: 'text', isNullable: true },
          { name: 'request_id', type: 'varchar', length: '64' },
          { name: 'created_at', type: 'bigint' },
          { name: 'revoked_at', type: 'bigint', isNullable: true },
        ],
      }),
    );
    await q.createIndex(
      'consent_grants',
      new TableIndex({
        name: 'idx_consent_grants_lookup',
        columnNames: ['tenant_id', 'agent_id', 'scope'],
      }),
    );

    await q.createTable(
      new Table({
        name: 'consent_audit',
        columns: [
          {
            name: 'id',
            type: 'integer',
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'event', type: 'varchar', length: '32' },
          { name: 'agent_id', type: 'varchar', length: '64' },
          { name: 'request_id', type: 'varchar', length: '64', isNullable: true },
          { name: 'grant_id', type: 'varchar', length: '64', isNullable: true },
          { name: 'run_id', type: 'varchar', length: '64', isNullable: true },
          { name: 'tool_call_id', type: 'varchar', length: '200', isNullable: true },
          { name: 'tool_name', type: 'varchar', length: '200', isNullable: true },
          { name: 'scope', type: 'varchar', length: '200', isNullable: true },
          { name: 'decision', type: 'varchar', length: '32', isNullable: true },
          { name: 'reason', type: 'text', isNullable: true },
          { name: 'actor', type: 'varchar', length: '200' },
          { name: 'channel', type: 'varchar', length: '16' },
          { name: 'at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'consent_audit',
      new TableIndex({ name: 'idx_consent_audit_tenant', columnNames: ['tenant_id', 'id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('consent_audit');
    await q.dropTable('consent_grants');
    await q.dropTable('consent_requests');
  }
}
