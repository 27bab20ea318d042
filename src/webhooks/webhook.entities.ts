import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../database/columns';
import type { WebhookEvent } from '../core/webhooks/webhook-rules';
import { DeliveryColumns } from '../deliveries/delivery-columns';

/** Binds a sealed webhook secret to its tenant and webhook: a row copied elsewhere does not decrypt. */
export const webhookSecretAad = (tenantId: string, webhookId: string) =>
  `webhook\u0000${tenantId}\u0000${webhookId}`;

/** A tenant's webhook: where to POST which events, and the secret that signs them. */
@Entity('webhooks')
@Index('idx_webhooks_tenant', ['tenantId'])
export class WebhookEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 }) id!: string;
  @Column({ name: 'tenant_id', type: 'varchar', length: 200 }) tenantId!: string;
  @Column({ type: 'text' }) url!: string;
  @JsonColumn() events!: WebhookEvent[];
  /** The signing secret sealed with the secrets cipher (`webhookSecretAad`); shown once, at creation. */
  @Column({ name: 'secret_sealed', type: 'text' }) sealedSecret!: string;
  @Column({ type: 'text', nullable: true }) description!: string | null;
  @EpochMsColumn({ name: 'created_at' }) createdAt!: number;
}

/**
 * One event for one webhook. (webhook_id, event_key) is unique: an event seen by several instances (or
 * twice) is delivered once. Any instance may send it after claiming it (claimed_until).
 */
@Entity('webhook_deliveries')
@Index('idx_webhook_deliveries_event', ['webhookId', 'eventKey'], { unique: true })
@Index('idx_webhook_deliveries_due', ['status', 'nextAttemptAt'])
@Index('idx_webhook_deliveries_tenant_due', ['tenantId', 'status', 'nextAttemptAt'])
export class WebhookDeliveryEntity extends DeliveryColumns {
  @PrimaryColumn({ type: 'varchar', length: 64 }) id!: string;
  @Column({ name: 'webhook_id', type: 'varchar', length: 64 }) webhookId!: string;
  @Column({ type: 'varchar', length: 32 }) event!: WebhookEvent;
  @Column({ name: 'event_key', type: 'varchar', length: 300 }) eventKey!: string;
}

/** A one-time decision URL's token (stored as its SHA-256; the token itself only travels in the delivery). */
@Entity('webhook_decision_tokens')
export class WebhookDecisionTokenEntity {
  @PrimaryColumn({ name: 'token_hash', type: 'varchar', length: 64 }) tokenHash!: string;
  @Column({ name: 'tenant_id', type: 'varchar', length: 200 }) tenantId!: string;
  @Column({ name: 'webhook_id', type: 'varchar', length: 64 }) webhookId!: string;
  @Column({ name: 'request_id', type: 'varchar', length: 64 }) requestId!: string;
  @EpochMsColumn({ name: 'expires_at' }) expiresAt!: number;
  @EpochMsColumn({ name: 'used_at', nullable: true }) usedAt!: number | null;
}

export const WEBHOOK_ENTITIES = [WebhookEntity, WebhookDeliveryEntity, WebhookDecisionTokenEntity];
