import { Entity, PrimaryColumn } from 'typeorm';
import { BigIntColumn } from '../database/columns';

/**
 * Part of the bytes a tenant stores (`quotas.stored_bytes`): its bytes are the sum of its rows, one per
 * stripe (migration StoredBytes). Kept by the database's triggers on the counted tables, never written by
 * the app.
 */
@Entity('tenant_bytes')
export class TenantBytesEntity {
  @PrimaryColumn({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @PrimaryColumn({ type: 'integer' })
  stripe!: number;

  @BigIntColumn({ default: 0 })
  used!: number;
}
