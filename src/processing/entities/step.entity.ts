import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../../database/columns';

/** One model call (and the tools it asked for). */
@Entity('steps')
@Index('idx_steps_run', ['run_id', 'step_number'])
export class StepEntity {
  @PrimaryColumn({ type: 'varchar' })
  id!: string;

  @Column({ type: 'varchar' })
  tenant_id!: string;

  @Column({ type: 'varchar' })
  agent_id!: string;

  @Column({ type: 'varchar' })
  run_id!: string;

  @Column({ type: 'varchar' })
  batch_id!: string;

  /** 1-based model-call number within the batch. */
  @Column({ type: 'integer' })
  step_number!: number;

  @Column({ type: 'varchar', nullable: true })
  model!: string | null;

  @JsonColumn()
  usage!: { prompt_tokens: number; completion_tokens: number; total_tokens: number };

  @Column({ type: 'varchar', nullable: true })
  finish_reason!: string | null;

  @EpochMsColumn()
  created_at!: number;
}
