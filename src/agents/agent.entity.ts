import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { AgentType } from '../core/agents/agent-type';
import { EpochMsColumn, JsonColumn } from '../database/columns';
import type { EmbeddingConfig } from '../models/embeddings/embedding-catalog';
import type { LlmConfig, ScriptedTurn } from '../models/model-provider';
import type { BudgetFields } from '../core/loop/budgets';
import type { StoredToolRule } from '../core/rules/validate-tool-rules';
import type {
  AgentSource,
  AgentToolExecutorSettings,
  MemoryBlock,
} from '../core/agents/agent-record';

@Entity('agents')
@Index('idx_agents_tenant_created', ['tenant_id', 'created_at'])
@Index('idx_agents_tenant_name', ['tenant_id', 'name'])
// one agent per name among those loaded from files (migration UniqueFileAgentNames)
@Index('idx_agents_file_name', ['tenant_id', 'name'], { unique: true, where: "source = 'file'" })
export class AgentEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ type: 'text' })
  system!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @JsonColumn()
  tools!: string[];

  @JsonColumn()
  tool_rules!: StoredToolRule[];

  /** Not a column: the agent's blocks in order (blocks + agent_blocks), filled and written by AgentsRepository. */
  blocks!: MemoryBlock[];

  @JsonColumn()
  llm_config!: LlmConfig;

  /** Also in agent_tags, for filtering; this copy keeps the order as given. */
  @JsonColumn()
  tags!: string[];

  @JsonColumn({ nullable: true })
  metadata!: Record<string, unknown> | null;

  /** The agent's overrides only; defaults come from config at read time. */
  @JsonColumn()
  tool_executor!: Partial<AgentToolExecutorSettings>;

  @JsonColumn({ nullable: true })
  model_script!: ScriptedTurn[] | null;

  @Column({ type: 'integer', nullable: true })
  max_steps!: number | null;

  /** null for agents stored before budgets existed: none set. */
  @JsonColumn({ nullable: true })
  budgets!: BudgetFields | null;

  /** Names of client tools (Letta's per-request `client_tools`) its rules may name; null for older rows. */
  @JsonColumn({ nullable: true })
  client_tools!: string[] | null;

  /** The embedding model of the archive made for it (Letta's EmbeddingConfig); null: none. */
  @JsonColumn({ nullable: true })
  embedding_config!: EmbeddingConfig | null;

  /** Letta's agent_type; rows from before it existed are 'memgpt_agent', which is how they behave. */
  @Column({ type: 'varchar', length: 32, default: 'memgpt_agent' })
  agent_type!: AgentType;

  /** Letta's timezone (an IANA name); rows from before it existed are UTC, Letta's default. */
  @Column({ type: 'varchar', length: 64, default: 'UTC' })
  timezone!: string;

  /** Letta's hidden: left out of the agents list unless it asks for hidden ones; null = not hidden. */
  @Column({ type: 'boolean', nullable: true })
  hidden!: boolean | null;

  /** Letta's file settings, kept and answered (this server has no files); null = Letta's defaults. */
  @Column({ type: 'integer', nullable: true })
  max_files_open!: number | null;

  @Column({ type: 'integer', nullable: true })
  per_file_view_window_char_limit!: number | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  last_stop_reason!: string | null;

  /** When its last run ended, and how long it took (Letta's run metrics); null before its first. */
  @EpochMsColumn({ nullable: true })
  last_run_completion!: number | null;

  @Column({ type: 'integer', nullable: true })
  last_run_duration_ms!: number | null;

  @Column({ type: 'varchar', length: 16 })
  source!: AgentSource;

  /** For file agents: a hash of the file's validated content, so an unchanged file changes nothing. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  source_hash!: string | null;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;
}

@Entity('agent_tags')
@Index('idx_agent_tags_tenant_tag', ['tenant_id', 'tag'])
export class AgentTagEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 200 })
  tag!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;
}
