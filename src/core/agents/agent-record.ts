import type { EmbeddingConfig } from '../../models/embeddings/embedding-catalog';
import type { LlmConfig, ScriptedTurn } from '../../models/model-provider';
import type { BudgetFields } from '../loop/budgets';
import type { StoredToolRule } from '../rules/validate-tool-rules';
import type { AgentType } from './agent-type';

/** Letta's default block size limit (characters): its CORE_MEMORY_BLOCK_CHAR_LIMIT. */
export const DEFAULT_BLOCK_LIMIT = 100000;

export interface MemoryBlock {
  id: string;
  label: string;
  value: string;
  limit: number;
  description: string | null;
  read_only: boolean;
  metadata: Record<string, unknown> | null;
  /** Letta's block tags (lists filter by them); absent or null: none. */
  tags?: string[] | null;
  /** Letta's `hidden` (the blocks list leaves hidden ones out); absent or null: never set. */
  hidden?: boolean | null;
}

/** Per-agent executor settings (agent field `tool_executor`); unset ones fall back to the config defaults. */
export interface AgentToolExecutorSettings {
  tool_timeout_seconds: number;
  consent_timeout_seconds: number;
  /** 0 turns the default dedupe window off for this agent. */
  dedupe_window_seconds: number;
}

export type AgentSource = 'api' | 'file';

/** Everything an agent is, as a plain value: what AgentsService hands other modules. */
export interface AgentRecord {
  id: string;
  tenant_id: string;
  name: string;
  system: string;
  description: string | null;
  /** Letta's agent_type: its base tools (on create) and its loop; fixed once created. */
  agent_type: AgentType;
  /** Tool names, built-ins included. */
  tools: string[];
  tool_rules: StoredToolRule[];
  blocks: MemoryBlock[];
  llm_config: LlmConfig;
  /** The model handle, `<model_endpoint_type>/<model>`. */
  model: string;
  tags: string[];
  metadata: Record<string, unknown> | null;
  /** Resolved: the agent's overrides over the config defaults. */
  tool_executor: AgentToolExecutorSettings;
  model_script: ScriptedTurn[] | null;
  max_steps: number | null;
  /** The agent's own budgets (null = the request's, else the config's). */
  budgets: BudgetFields;
  /**
   * Names of client tools (offered per request by Letta's `client_tools`) that the agent's rules may
   * name: rules and consent apply to them by name as to the agent's own tools.
   */
  client_tools: string[];
  /** The embedding model given to the archive made for it; null: none (full-text search only). */
  embedding_config: EmbeddingConfig | null;
  /** Letta's timezone (IANA name, default UTC): the times the model reads are written in it. */
  timezone: string;
  /** Letta's hidden (left out of lists); null = not hidden. */
  hidden: boolean | null;
  /** Letta's file settings: kept and answered, used by nothing (no files here). */
  max_files_open: number | null;
  per_file_view_window_char_limit: number | null;
  last_stop_reason: string | null;
  /** When its last run ended (epoch ms) and how long it ran; null before its first. */
  last_run_completion: number | null;
  last_run_duration_ms: number | null;
  source: AgentSource;
  created_at: number;
  updated_at: number;
}
