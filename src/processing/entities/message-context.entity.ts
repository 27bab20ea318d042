import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { SharedRange } from '../../core/loop/fork-ranges';
import { BigIntColumn, EpochMsColumn, JsonColumn } from '../../database/columns';

/**
 * Where a conversation's in-context window starts (Letta's in-context messages): history before
 * `start_seq` stays stored but is out of context, and `summary` (a compaction's) stands in for it.
 * No row: everything is in context. Written by reset-messages and compaction, read once per run.
 */
@Entity('message_contexts')
export class MessageContextEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;

  /** The conversation's id; '' for the agent's default conversation. */
  @PrimaryColumn({ type: 'varchar', length: 64 })
  conversation_key!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @BigIntColumn()
  start_seq!: number;

  @Column({ type: 'text', nullable: true })
  summary!: string | null;

  /** Bumped at every change: a cached context window of another version is rebuilt. */
  @Column({ type: 'integer' })
  version!: number;

  /** A fork's: the source's in-context messages it shares (referenced, not copied); null: none. */
  @JsonColumn({ nullable: true })
  inherited!: SharedRange[] | null;

  @EpochMsColumn()
  updated_at!: number;
}
