import type { AgentRecord, MemoryBlock } from '../core/agents/agent-record';
import type { LlmConfig } from '../models/model-provider';
import { toToolResponse } from '../tools/tool-response.mapper';
import type { AgentRelation } from '../core/agents/agent-include';
import type { AgentView } from './agents.service';

const iso = (ms: number) => new Date(ms).toISOString();

/** Never let anything key-like out, whatever got stored. */
export function safeLlmConfig(c: LlmConfig): LlmConfig {
  const out: LlmConfig = { ...c };
  for (const k of Object.keys(out)) if (/key|secret|password|access_token/i.test(k)) delete out[k];
  return out;
}

/** An agent in Letta's response shape (fields whitelisted), plus our extension fields. */
/** A memory block as Letta shows it. */
export function toBlockResponse(b: MemoryBlock): Record<string, unknown> {
  return {
    id: b.id,
    label: b.label,
    value: b.value,
    limit: b.limit,
    description: b.description,
    read_only: b.read_only,
    metadata: b.metadata ?? {},
    tags: b.tags ?? [],
    is_template: false,
    hidden: b.hidden ?? null,
    // Letta Cloud's templates, projects and users
    template_name: null,
    template_id: null,
    base_template_id: null,
    deployment_id: null,
    entity_id: null,
    preserve_on_migration: false,
    project_id: null,
    created_by_id: null,
    last_updated_by_id: null,
  };
}

export function toAgentResponse(v: AgentView): Record<string, unknown> {
  const a = v.record;
  const has = (r: AgentRelation) => v.include.has(r);
  const blocks = has('blocks') ? a.blocks.map(toBlockResponse) : [];
  // Letta's AgentEnvironmentVariable, write-only here: the value never leaves the store
  const secrets = v.secrets.map((s) => ({
    key: s.name,
    value: REDACTED,
    agent_id: a.id,
    description: null,
    created_at: s.created_at === null ? null : iso(s.created_at),
    updated_at: s.updated_at === null ? null : iso(s.updated_at),
  }));
  return {
    id: a.id,
    name: a.name,
    system: a.system,
    description: a.description,
    agent_type: a.agent_type,
    tools: v.tools.map(toToolResponse),
    tool_rules: a.tool_rules,
    // Letta's Memory: no files (file_blocks), no git-backed memory here
    memory: { blocks, agent_type: a.agent_type, git_enabled: false, file_blocks: [] },
    // fields Letta's AgentState requires: the blocks again at the top level, and no data sources here
    blocks,
    sources: [],
    llm_config: safeLlmConfig(a.llm_config),
    model: a.model,
    embedding: a.embedding_config?.handle ?? null,
    embedding_config: a.embedding_config,
    tags: has('tags') ? a.tags : [],
    metadata: a.metadata,
    identity_ids: v.identities.map((i) => i.id),
    identities: v.identities,
    secrets,
    tool_exec_environment_variables: secrets,
    multi_agent_group: null,
    managed_group: null,
    tool_executor: a.tool_executor,
    model_script: a.model_script,
    max_steps: a.max_steps,
    budgets: a.budgets,
    client_tools: a.client_tools,
    source: a.source,
    last_stop_reason: a.last_stop_reason,
    last_run_completion: a.last_run_completion === null ? null : iso(a.last_run_completion),
    last_run_duration_ms: a.last_run_duration_ms,
    timezone: a.timezone,
    model_settings: modelSettingsOf(a.llm_config),
    hidden: a.hidden,
    ...fileSettingsOf(a),
    // Letta fields this server answers as they are: no per-request buffer clearing, no sleep-time agent,
    // no structured output, no agent-level compaction settings (compaction takes them per request), no
    // Letta Cloud projects, templates or users
    message_buffer_autoclear: false,
    enable_sleeptime: false,
    response_format: null,
    compaction_settings: null,
    project_id: null,
    template_id: null,
    base_template_id: null,
    deployment_id: null,
    entity_id: null,
    created_by_id: null,
    last_updated_by_id: null,
    pending_approval: v.pendingApproval ?? null,
    message_ids: v.messageIds ?? null,
    created_at: iso(a.created_at),
    updated_at: iso(a.updated_at),
  };
}

/** What an agent secret's `value` shows: secrets are write-only over the API. */
const REDACTED = '[redacted]';

/**
 * Letta's `model_settings` of an agent, from its llm_config as Letta derives it (`_to_model_settings`):
 * what the model calls are made with. `max_output_tokens` only when the agent has one (this server
 * then asks for no limit); `parallel_tool_calls` true, as Letta's default: a model's several calls in
 * one turn all run.
 */
export function modelSettingsOf(c: LlmConfig): Record<string, unknown> {
  return {
    ...(c.model_endpoint_type === 'openai' ? { provider_type: 'openai' } : {}),
    ...(typeof c.max_tokens === 'number' ? { max_output_tokens: c.max_tokens } : {}),
    ...(typeof c.temperature === 'number' ? { temperature: c.temperature } : {}),
    parallel_tool_calls: true,
  };
}

/**
 * Letta's file settings: as set, else Letta's defaults for the context window
 * (`calculate_file_defaults_based_on_context_window`). This server has no files: they change nothing.
 */
function fileSettingsOf(a: AgentRecord): {
  max_files_open: number;
  per_file_view_window_char_limit: number;
} {
  const w = typeof a.llm_config.context_window === 'number' ? a.llm_config.context_window : 0;
  const [files, chars] = !w
    ? [5, 50_000]
    : w <= 8_000
      ? [3, 5_000]
      : w <= 32_000
        ? [5, 15_000]
        : w <= 128_000
          ? [10, 25_000]
          : w <= 200_000
            ? [10, 40_000]
            : [15, 40_000];
  return {
    max_files_open: a.max_files_open ?? files,
    per_file_view_window_char_limit: a.per_file_view_window_char_limit ?? chars,
  };
}
