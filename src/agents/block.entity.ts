import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../database/columns';

/** A memory block (Letta's standalone block); agents see it through agent_blocks. */
@Entity('blocks')
@Index('idx_blocks_tenant_created', ['tenant_id', 'created_at'])
export class BlockEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 200 })
  label!: string;

  @Column({ type: 'text' })
  value!: string;

  @Column({ type: 'integer', name: 'char_limit' })
  limit!: number;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ type: 'boolean', default: false })
  read_only!: boolean;

  @JsonColumn({ nullable: true })
  metadata!: Record<string, unknown> | null;

  /** Letta's block tags, as a JSON list (null: none); `GET /v1/blocks/?tags=` matches whole tags. */
  @JsonColumn({ nullable: true })
  tags!: string[] | null;

  /** Letta's `hidden`: a hidden block is left out of `GET /v1/blocks/` unless it asks for hidden ones. */
  @Column({ type: 'boolean', nullable: true })
  hidden!: boolean | null;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;
}

/** Which agents see which blocks, in each agent's order; a block may be linked to several agents. */
@Entity('agent_blocks')
@Index('idx_agent_blocks_block', ['block_id'])
export class AgentBlockEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  block_id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'integer' })
  position!: number;
}
