import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../database/columns';
import type { IdentityProperty, IdentityType } from '../core/identities/validate-identity';

/** Letta's identity: a user or organisation the tenant's agents act for; identifier_key is unique per tenant. */
@Entity('identities')
@Index('idx_identities_tenant_key', ['tenant_id', 'identifier_key'], { unique: true })
@Index('idx_identities_tenant_created', ['tenant_id', 'created_at'])
export class IdentityEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 200 })
  identifier_key!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ type: 'varchar', length: 16 })
  identity_type!: IdentityType;

  @JsonColumn()
  properties!: IdentityProperty[];

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;
}

/** Which identities an agent has (both of one tenant). */
@Entity('agent_identities')
@Index('idx_agent_identities_identity', ['identity_id'])
export class AgentIdentityEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  identity_id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;
}

export const IDENTITY_ENTITIES = [IdentityEntity, AgentIdentityEntity];
