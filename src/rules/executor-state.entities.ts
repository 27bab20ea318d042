import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../database/columns';
import type { BatchState } from '../core/executor/contracts';

/** A successful call's result, by canonical key (hashed: keys hold whole argument objects). */
@Entity('executor_dedupe')
@Index('idx_executor_dedupe_expires', ['expires_at'])
export class DedupeEntryEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;
  @PrimaryColumn({ type: 'varchar', length: 64 })
  key_hash!: string;
  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;
  @Column({ type: 'text' })
  result!: string;
  @EpochMsColumn()
  at!: number;
  @EpochMsColumn()
  expires_at!: number;
  /** The call did not finish (timed out, stopped): its outcome is unknown. */
  @Column({ type: 'boolean', default: false })
  outcome_unknown!: boolean;
}

/** When a tool last ran for an agent (cooldowns). */
@Entity('executor_last_executions')
export class LastExecutionEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;
  @PrimaryColumn({ type: 'varchar', length: 64 })
  tool_name!: string;
  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;
  @EpochMsColumn()
  at!: number;
}

/** Per-batch state (max calls, exclusive groups, exit requirements), kept until the batch completes or its TTL. */
@Entity('executor_batches')
@Index('idx_executor_batches_updated', ['updated_at'])
export class BatchStateEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  batch_id!: string;
  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;
  @JsonColumn()
  state!: BatchState;
  @EpochMsColumn()
  created_at!: number;
  @EpochMsColumn()
  updated_at!: number;
  /** The batch waits for a person or a client: kept past the TTL until it goes on (the next save clears it). */
  @Column({ type: 'boolean', default: false })
  parked!: boolean;
}

/**
 * A call that started executing: at most once, across restarts. A call is its tool_call_id within the
 * model step whose turn holds it (providers may reuse ids across responses); '' for a call outside any
 * model turn, and for claims stored before claims had a step.
 */
@Entity('executor_tool_call_claims')
@Index('idx_executor_claims_at', ['at'])
export class ToolCallClaimEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;
  @PrimaryColumn({ type: 'varchar', length: 200 })
  tool_call_id!: string;
  @PrimaryColumn({ type: 'varchar', length: 64, default: '' })
  step_id!: string;
  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;
  @EpochMsColumn()
  at!: number;
}

export const EXECUTOR_STATE_ENTITIES = [
  DedupeEntryEntity,
  LastExecutionEntity,
  BatchStateEntity,
  ToolCallClaimEntity,
];
