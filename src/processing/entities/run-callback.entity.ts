import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { DeliveryColumns } from '../../deliveries/delivery-columns';

/**
 * A run's `callback_url` POST, stored with the run's end (same transaction): sent by whichever instance
 * claims it, retried as webhook deliveries are, so a crash or a shutdown before it went out loses nothing.
 * One per run (its id is the run's); `body` is Letta's callback body as the run ended (`toCallbackBody`).
 */
@Entity('run_callbacks')
@Index('idx_run_callbacks_due', ['status', 'nextAttemptAt'])
@Index('idx_run_callbacks_tenant_due', ['tenantId', 'status', 'nextAttemptAt'])
export class RunCallbackEntity extends DeliveryColumns {
  @PrimaryColumn({ name: 'run_id', type: 'varchar', length: 64 }) id!: string;
  @Column({ type: 'text' }) url!: string;
}
