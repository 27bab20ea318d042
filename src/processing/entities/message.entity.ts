import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { BigIntColumn, EpochMsColumn, JsonColumn } from '../../database/columns';

export type MessageType =
  | 'user_message'
  | 'system_message'
  | 'reasoning_message'
  | 'assistant_message'
  | 'tool_call_message'
  | 'tool_return_message'
  | 'approval_request_message'
  | 'approval_response_message';

/** One Letta message; `payload` holds its type-specific fields as the API returns them. */
@Entity('messages')
@Index('idx_messages_agent_seq', ['agent_id', 'seq_id'], { unique: true })
@Index('idx_messages_run', ['run_id', 'seq_id'])
@Index('idx_messages_tenant_time', ['tenant_id', 'created_at', 'id'])
@Index('idx_messages_conversation', ['agent_id', 'conversation_id', 'seq_id'])
export class MessageEntity {
  @PrimaryColumn({ type: 'varchar' })
  id!: string;

  @Column({ type: 'varchar' })
  tenant_id!: string;

  @Column({ type: 'varchar' })
  agent_id!: string;

  /** Monotonically increasing per agent. */
  @BigIntColumn()
  seq_id!: number;

  @Column({ type: 'varchar', nullable: true })
  run_id!: string | null;

  @Column({ type: 'varchar', nullable: true })
  step_id!: string | null;

  @Column({ type: 'varchar', nullable: true })
  batch_id!: string | null;

  /** The conversation the message belongs to (null: the agent's default one). */
  @Column({ type: 'varchar', length: 64, nullable: true })
  conversation_id!: string | null;

  @Column({ type: 'varchar' })
  message_type!: MessageType;

  @JsonColumn()
  payload!: Record<string, unknown>;

  @EpochMsColumn()
  created_at!: number;
}
