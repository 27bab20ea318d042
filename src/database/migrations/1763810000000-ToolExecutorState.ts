import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** The executor's persistent and per-batch state (src/rules/executor-state.entities.ts). */
export class ToolExecutorState1763810000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    const tenant = { name: 'tenant_id', type: 'varchar', length: '200' };
    await q.createTable(
      new Table({
        name: 'executor_dedupe',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'key_hash', type: 'varchar', length: '64', isPrimary: true },
          tenant,
          { name: 'result', type: 'text' },
          { name: 'at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'executor_dedupe',
      new TableIndex({ name: 'idx_executor_dedupe_expires', columnNames: ['expires_at'] }),
    );
    await q.createTable(
      new Table({
        name: 'executor_last_executions',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tool_name', type: 'varchar', length: '64', isPrimary: true },
          tenant,
          { name: 'at', type: 'bigint' },
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'executor_batches',
        columns: [
          { name: 'batch_id', type: 'varchar', length: '64', isPrimary: true },
          tenant,
          { name: 'state', type: 'text' },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'executor_batches',
      new TableIndex({ name: 'idx_executor_batches_updated', columnNames: ['updated_at'] }),
    );
    await q.createTable(
      new Table({
        name: 'executor_tool_call_claims',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tool_call_id', type: 'varchar', length: '200', isPrimary: true },
          tenant,
          { name: 'at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'executor_tool_call_claims',
      new TableIndex({ name: 'idx_executor_claims_at', columnNames: ['at'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('executor_tool_call_claims');
    await q.dropTable('executor_batches');
    await q.dropTable('executor_last_executions');
    await q.dropTable('executor_dedupe');
  }
}
