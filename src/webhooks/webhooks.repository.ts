import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, IsNull, LessThanOrEqual } from 'typeorm';
import type { PageBounds } from '../common/list-page';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { readWithin } from '../database/keyset-page';
import { DeliveryQueue } from '../deliveries/delivery-queue';
import { RowReader } from '../database/raw-reads';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { answeringConflicts } from '../database/unique-violation';
import { WriteCountedCache } from '../database/write-counted-cache';
import {
  WebhookDecisionTokenEntity,
  WebhookDeliveryEntity,
  WebhookEntity,
} from './webhook.entities';

const webhooksOf = new RowReader(WebhookEntity, 'tenant_id = ? ORDER BY created_at ASC');

/** Every read and write of the webhook tables. */
@Injectable()
export class WebhooksRepository {
  /**
   * A tenant's webhooks as the dispatcher reads them at every run's end, kept only where this process is
   * the database's only writer (SQLite): with several instances, a webhook added or deleted through
   * another one would not reach this cache (the event bus between them is best effort).
   */
  private readonly subscribed: WriteCountedCache<WebhookEntity[]>;
  /** Deliveries due, claimed and attempted (the dispatcher's `DeliveryPump`). */
  readonly deliveries: DeliveryQueue<WebhookDeliveryEntity>;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.deliveries = new DeliveryQueue(ds, tx, WebhookDeliveryEntity);
    this.subscribed = new WriteCountedCache(
      !config.database.url,
      config.database.record_cache_bytes,
    );
  }

  /** Inserts a webhook of the tenant's, within its quota (409 QUOTA_EXCEEDED, nothing written). */
  async insertWebhook(row: WebhookEntity): Promise<void> {
    await this.subscribed.write(() =>
      this.tx.run(async (em) => {
        await em.insert(WebhookEntity, row);
        await this.quotas.assertWithin(em, row.tenantId, 'webhooks');
      }),
    );
  }

  listForTenant(tenantId: string): Promise<WebhookEntity[]> {
    return this.ds.manager.find(WebhookEntity, {
      where: { tenantId },
      order: { createdAt: 'ASC' },
    });
  }

  /** The tenant's webhooks, oldest first, for the dispatcher (shared objects: not to be changed). */
  async subscriptions(tenantId: string): Promise<readonly WebhookEntity[]> {
    return this.subscribed.read(tenantId, () => webhooksOf.all(this.ds, [tenantId]));
  }

  find(tenantId: string, id: string): Promise<WebhookEntity | null> {
    return this.ds.manager.findOneBy(WebhookEntity, { tenantId, id });
  }

  findById(id: string): Promise<WebhookEntity | null> {
    return this.ds.manager.findOneBy(WebhookEntity, { id });
  }

  /** The webhook, its deliveries and its decision tokens go together. */
  async deleteWebhook(tenantId: string, id: string): Promise<void> {
    await this.subscribed.write(() =>
      this.tx.run(async (em) => {
        await em.delete(WebhookDecisionTokenEntity, { tenantId, webhookId: id });
        await em.delete(WebhookDeliveryEntity, { tenantId, webhookId: id });
        await em.delete(WebhookEntity, { tenantId, id });
      }),
    );
  }

  /**
   * Stores a delivery (and the decision token it carries) unless this webhook already has one for the event:
   * false then. Every instance that sees an event may try; one row wins.
   */
  async enqueue(
    delivery: WebhookDeliveryEntity,
    token: WebhookDecisionTokenEntity | null,
  ): Promise<boolean> {
    const exists = () =>
      this.ds.manager.existsBy(WebhookDeliveryEntity, {
        webhookId: delivery.webhookId,
        eventKey: delivery.eventKey,
      });
    if (await exists()) return false;
    try {
      await answeringConflicts(() =>
        this.tx.run(async (em) => {
          await em.insert(WebhookDeliveryEntity, delivery);
          if (token) await em.insert(WebhookDecisionTokenEntity, token);
        }),
      );
      return true;
    } catch (e) {
      // the unique index refused a concurrent twin: that one is delivered
      if (await exists()) return false;
      throw e;
    }
  }

  deliveriesOf(tenantId: string, webhookId: string, page: PageBounds) {
    const qb = this.ds.manager
      .createQueryBuilder(WebhookDeliveryEntity, 'd')
      .where('d.tenant_id = :tenantId AND d.webhook_id = :webhookId', { tenantId, webhookId })
      .orderBy('d.created_at', 'DESC')
      .addOrderBy('d.id', 'ASC');
    return readWithin(qb, 'd', page);
  }

  findToken(tokenHash: string): Promise<WebhookDecisionTokenEntity | null> {
    return this.ds.manager.findOneBy(WebhookDecisionTokenEntity, { tokenHash });
  }

  /** One use per token: only the first claim wins. */
  async useToken(tokenHash: string, now: number): Promise<boolean> {
    const res = await this.ds.manager.update(
      WebhookDecisionTokenEntity,
      { tokenHash, usedAt: IsNull() },
      { usedAt: now },
    );
    return (res.affected ?? 0) === 1;
  }

  async releaseToken(tokenHash: string): Promise<void> {
    await this.ds.manager.update(WebhookDecisionTokenEntity, { tokenHash }, { usedAt: null });
  }

  /** Finished deliveries created before `before`, and tokens expired by then. */
  async prune(before: number, em: EntityManager = this.ds.manager): Promise<void> {
    await this.deliveries.prune(before, em);
    await em.delete(WebhookDecisionTokenEntity, { expiresAt: LessThanOrEqual(before) });
  }
}
