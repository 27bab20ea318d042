import { Column } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import type { DeliveryStatus, StoredDelivery } from './delivery-queue';

/**
 * The columns of a table of stored deliveries (`webhook_deliveries`, `run_callbacks`), inherited by each
 * entity, which adds its primary key `id` and what is its own.
 */
export abstract class DeliveryColumns implements StoredDelivery {
  abstract id: string;
  @Column({ name: 'tenant_id', type: 'varchar', length: 200 }) tenantId!: string;
  /** The exact body sent on every attempt. */
  @Column({ type: 'text' }) body!: string;
  @Column({ type: 'varchar', length: 16 }) status!: DeliveryStatus;
  @Column({ type: 'integer' }) attempts!: number;
  @Column({ name: 'last_status_code', type: 'integer', nullable: true }) lastStatusCode!:
    number | null;
  @Column({ name: 'last_error', type: 'text', nullable: true }) lastError!: string | null;
  @EpochMsColumn({ name: 'next_attempt_at' }) nextAttemptAt!: number;
  @EpochMsColumn({ name: 'claimed_until', nullable: true }) claimedUntil!: number | null;
  @EpochMsColumn({ name: 'created_at' }) createdAt!: number;
  @EpochMsColumn({ name: 'last_attempt_at', nullable: true }) lastAttemptAt!: number | null;
}
