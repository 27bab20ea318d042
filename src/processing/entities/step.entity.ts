import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { ModelUsage } from '../../models/model-provider';
import { BigIntColumn, EpochMsColumn, JsonColumn } from '../../database/columns';

export type StepFeedback = 'positive' | 'negative';

/** One model call (and the tools it asked for). */
@Entity('steps')
@Index('idx_steps_run', ['run_id', 'step_number'])
@Index('idx_steps_tenant_time', ['tenant_id', 'created_at', 'id'])
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

  /**
   * What the model call was made with, as Letta's step answers it: the model's handle, its endpoint and
   * its context window (null on rows older than them).
   */
  @Column({ type: 'varchar', nullable: true })
  model_handle?: string | null;

  @Column({ type: 'text', nullable: true })
  model_endpoint?: string | null;

  @Column({ type: 'integer', nullable: true })
  context_window_limit?: number | null;

  /** The model call's tokens, with the cached and reasoning ones where the endpoint reported them. */
  @JsonColumn()
  usage!: ModelUsage;

  @Column({ type: 'varchar', nullable: true })
  finish_reason!: string | null;

  /** Letta's feedback on the step (`PATCH /v1/steps/{id}/feedback`). */
  @Column({ type: 'varchar', length: 16, nullable: true })
  feedback!: StepFeedback | null;

  /** Letta's feedback tags; null: none given. */
  @JsonColumn({ nullable: true })
  tags!: string[] | null;

  /** When the model call started (epoch ms) and how long it took (ns); null on rows older than them. */
  @EpochMsColumn({ nullable: true })
  model_call_started_at!: number | null;

  @BigIntColumn({ nullable: true })
  model_call_ns!: number | null;

  @EpochMsColumn()
  created_at!: number;
}
