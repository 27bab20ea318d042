import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Webhooks, their deliveries and one-time decision tokens (src/webhooks). */
export class Webhooks1764700000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'webhooks',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'url', type: 'text' },
          { name: 'events', type: 'text' },
          { name: 'secret', type: 'varchar', length: '300' },
          { name: 'description', type: 'text', isNullable: true },
          { name: 'created_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'webhooks',
      new TableIndex({ name: 'idx_webhooks_tenant', columnNames: ['tenant_id'] }),
    );
    await q.createTable(
      new Table({
        name: 'webhook_deliveries',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'webhook_id', type: 'varchar', length: '64' },
          { name: 'event', type: 'varchar', length: '32' },
          { name: 'event_key', type: 'varchar', length: '300' },
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
      'webhook_deliveries',
      new TableIndex({
        name: 'idx_webhook_deliveries_event',
        columnNames: ['webhook_id', 'event_key'],
        isUnique: true,
      }),
    );
    await q.createIndex(
      'webhook_deliveries',
      new TableIndex({
        name: 'idx_webhook_deliveries_due',
        columnNames: ['status', 'next_attempt_at'],
      }),
    );
    await q.createTable(
      new Table({
        name: 'webhook_decision_tokens',
        columns: [
          { name: 'token_hash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'webhook_id', type: 'varchar', length: '64' },
          { name: 'request_id', type: 'varchar', length: '64' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'used_at', type: 'bigint', isNullable: true },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('webhook_decision_tokens');
    await q.dropTable('webhook_deliveries');
    await q.dropTable('webhooks');
  }
}
