import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * How many of one kind of thing (`quota`: agents, blocks, passages, …) a tenant stores. Kept by the
 * database's triggers on the counted tables (migration TenantUsage), never written by the app.
 */
@Entity('tenant_usage')
export class TenantUsageEntity {
  @PrimaryColumn({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 32 })
  quota!: string;

  @Column({ type: 'integer', default: 0 })
  used!: number;
}
