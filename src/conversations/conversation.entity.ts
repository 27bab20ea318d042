import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

/** One of an agent's conversations (Letta's): its own history; the agent's default one has no row. */
@Entity('conversations')
@Index('idx_conversations_agent', ['tenant_id', 'agent_id', 'created_at'])
export class ConversationEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 64 })
  agent_id!: string;

  @Column({ type: 'text', nullable: true })
  summary!: string | null;

  @Column({ type: 'boolean', default: false })
  archived!: boolean;

  /** Left out of listings (a fork made with `hidden`). */
  @Column({ type: 'boolean', default: false })
  hidden!: boolean;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;

  @EpochMsColumn({ nullable: true })
  last_message_at!: number | null;
}
