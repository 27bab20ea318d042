import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * The dispatcher picks due deliveries tenant by tenant (the one with the fewest open attempts first): one
 * tenant's due deliveries, oldest first, read through this index.
 */
export class WebhookDeliveriesByTenant1765120000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createIndex(
      'webhook_deliveries',
      new TableIndex({
        name: 'idx_webhook_deliveries_tenant_due',
        columnNames: ['tenant_id', 'status', 'next_attempt_at'],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('webhook_deliveries', 'idx_webhook_deliveries_tenant_due');
  }
}
