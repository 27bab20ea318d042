import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import type { DeliveryStatus, StoredDelivery } from '../../deliveries/delivery-queue';

/**
 * A run's `callback_url` POST, stored with the run's end (same transaction): sent by whichever instance
 * claims it, retried as webhook deliveries are, so a crash or a shutdown before it went out loses nothing.
 * One per run (its id is the run's).
 */
@Entity('run_callbacks')
@Index('idx_run_callbacks_due', ['status', 'nextAttemptAt'])
@Index('idx_run_callbacks_tenant_due', ['tenantId', 'status', 'nextAttemptAt'])
export class RunCallbackEntity implements StoredDelivery {
  @PrimaryColumn({ name: 'run_id', type: 'varchar', length: 64 }) id!: string;
  @Column({ name: 'tenant_id', type: 'varchar', length: 200 }) tenantId!: string;
  @Column({ type: 'text' }) url!: string;
  /** Letta's callback body, as the run ended (`toCallbackBody`). */
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
