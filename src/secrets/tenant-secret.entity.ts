import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

/** Owner of a tenant-wide secret (an agent-level secret has the agent's id). */
export const TENANT_WIDE = '';

/** A tenant's secret, sealed with AES-256-GCM (`v1:iv:tag:ciphertext`); the plain value is never stored. */
@Entity('tenant_secrets')
export class TenantSecretEntity {
  @PrimaryColumn({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  owner!: string;

  @PrimaryColumn({ type: 'varchar', length: 128 })
  name!: string;

  @Column({ type: 'text' })
  sealed!: string;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;
}
