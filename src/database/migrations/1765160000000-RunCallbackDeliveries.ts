import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * Run callbacks stored with the run's end and sent as webhook deliveries are (claimed, retried), instead
 * of waiting in memory: a crash or a shutdown no longer loses them (src/processing/run-callbacks.ts).
 */
export class RunCallbackDeliveries1765160000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'run_callbacks',
        columns: [
          { name: 'run_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'url', type: 'text' },
          { name: 'body', type: 'text' },
          { name: 'status', type: 'varchar', length: '16' },
          { name: 'attempts', type: 'integer' },
          { name: 'last_status_code', type: 'integer', isNullable: true },
          { name: 'last_error', type: 'text', isNullable: true },
          { name: 'next_attempt_at', type: 'bigint' },
          { name: 'claimed_until', type: 'bigint', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'last_attempt_at', type: 'bigint', isNullable: true },
        ],
      }),
    );
    await q.createIndex(
      'run_callbacks',
      new TableIndex({ name: 'idx_run_callbacks_due', columnNames: ['status', 'next_attempt_at'] }),
    );
    // due callbacks tenant by tenant, and a tenant's pending ones counted at each run's end
    await q.createIndex(
      'run_callbacks',
      new TableIndex({
        name: 'idx_run_callbacks_tenant_due',
        columnNames: ['tenant_id', 'status', 'next_attempt_at'],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('run_callbacks');
  }
}
