import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../database/columns';
import type {
  ConsentChannel,
  ConsentDecision,
  GrantDecision,
} from '../core/permissions/consent-decision';

export type ConsentStatus = 'pending' | 'approved' | 'denied';

/**
 * One question to a person: may this tool call run? Resolved once (first decision wins). A tool_call_id
 * may have several (a provider that reuses ids across responses): a parked call names its own by id.
 */
@Entity('consent_requests')
@Index('idx_consent_requests_call', ['tenantId', 'agentId', 'toolCallId'])
@Index('idx_consent_requests_status', ['status', 'expiresAt'])
@Index('idx_consent_requests_tenant_time', ['tenantId', 'createdAt', 'id'])
export class ConsentRequestEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 }) id!: string;
  @Column({ name: 'tenant_id', type: 'varchar', length: 200 }) tenantId!: string;
  @Column({ name: 'agent_id', type: 'varchar', length: 64 }) agentId!: string;
  @Column({ name: 'run_id', type: 'varchar', length: 64 }) runId!: string;
  @Column({ name: 'batch_id', type: 'varchar', length: 64 }) batchId!: string;
  @Column({ name: 'tool_call_id', type: 'varchar', length: 200 }) toolCallId!: string;
  @Column({ name: 'tool_name', type: 'varchar', length: 200 }) toolName!: string;
  @JsonColumn() arguments!: Record<string, unknown>;
  @Column({ type: 'varchar', length: 200 }) scope!: string;
  /** Why consent is asked (shown in the dialog). */
  @Column({ type: 'text' }) reason!: string;
  @Column({ type: 'varchar', length: 16 }) status!: ConsentStatus;
  @Column({ type: 'varchar', length: 32, nullable: true }) decision!: ConsentDecision | null;
  @Column({ name: 'decision_reason', type: 'text', nullable: true }) decisionReason!: string | null;
  /** The deciding tenant (the API key's), or 'system' for timeouts and cancellations. */
  @Column({ name: 'decided_by', type: 'varchar', length: 200, nullable: true }) decidedBy!:
    string | null;
  @Column({ type: 'varchar', length: 16, nullable: true }) channel!: ConsentChannel | null;
  @EpochMsColumn({ name: 'decided_at', nullable: true }) decidedAt!: number | null;
  @Column({ name: 'grant_id', type: 'varchar', length: 64, nullable: true }) grantId!:
    string | null;
  /** When an approval was used by the executor: an approval runs its call once. */
  @EpochMsColumn({ name: 'consumed_at', nullable: true }) consumedAt!: number | null;
  @EpochMsColumn({ name: 'created_at' }) createdAt!: number;
  @EpochMsColumn({ name: 'expires_at' }) expiresAt!: number;
}

/** A standing permission from approve_for_duration / approve_for_scope. */
@Entity('consent_grants')
@Index('idx_consent_grants_lookup', ['tenantId', 'agentId', 'scope'])
@Index('idx_consent_grants_tenant_time', ['tenantId', 'createdAt', 'id'])
export class ConsentGrantEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 }) id!: string;
  @Column({ name: 'tenant_id', type: 'varchar', length: 200 }) tenantId!: string;
  @Column({ name: 'agent_id', type: 'varchar', length: 64 }) agentId!: string;
  @Column({ type: 'varchar', length: 200 }) scope!: string;
  @Column({ type: 'varchar', length: 32 }) decision!: GrantDecision;
  @EpochMsColumn({ name: 'expires_at', nullable: true }) expiresAt!: number | null;
  @JsonColumn({ name: 'arg_constraint', nullable: true }) constraint!: Record<
    string,
    unknown
  > | null;
  @Column({ name: 'request_id', type: 'varchar', length: 64 }) requestId!: string;
  @EpochMsColumn({ name: 'created_at' }) createdAt!: number;
  @EpochMsColumn({ name: 'revoked_at', nullable: true }) revokedAt!: number | null;
}

export type AuditEvent =
  | 'request.created'
  | 'request.decided'
  | 'request.expired'
  | 'request.cancelled'
  | 'approval.used'
  | 'approval.restored'
  | 'grant.created'
  | 'grant.used'
  | 'grant.revoked';

/** Append-only: every request, decision, grant use and revocation, with who and through which channel. */
@Entity('consent_audit')
@Index('idx_consent_audit_tenant', ['tenantId', 'id'])
export class ConsentAuditEntity {
  @PrimaryGeneratedColumn({ type: 'integer' }) id!: number;
  @Column({ name: 'tenant_id', type: 'varchar', length: 200 }) tenantId!: string;
  @Column({ type: 'varchar', length: 32 }) event!: AuditEvent;
  @Column({ name: 'agent_id', type: 'varchar', length: 64 }) agentId!: string;
  @Column({ name: 'request_id', type: 'varchar', length: 64, nullable: true }) requestId!:
    string | null;
  @Column({ name: 'grant_id', type: 'varchar', length: 64, nullable: true }) grantId!:
    string | null;
  @Column({ name: 'run_id', type: 'varchar', length: 64, nullable: true }) runId!: string | null;
  @Column({ name: 'tool_call_id', type: 'varchar', length: 200, nullable: true }) toolCallId!:
    string | null;
  @Column({ name: 'tool_name', type: 'varchar', length: 200, nullable: true }) toolName!:
    string | null;
  @Column({ type: 'varchar', length: 200, nullable: true }) scope!: string | null;
  @Column({ type: 'varchar', length: 32, nullable: true }) decision!: string | null;
  @Column({ type: 'text', nullable: true }) reason!: string | null;
  /** The tenant whose key acted, or 'system'. */
  @Column({ type: 'varchar', length: 200 }) actor!: string;
  @Column({ type: 'varchar', length: 16 }) channel!: ConsentChannel;
  @EpochMsColumn() at!: number;
}

export const PERMISSION_ENTITIES = [ConsentRequestEntity, ConsentGrantEntity, ConsentAuditEntity];
