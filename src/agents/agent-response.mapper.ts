import type { MemoryBlock } from '../core/agents/agent-record';
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
    is_template: false,
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
    memory: { blocks },
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
    timezone: a.timezone,
    pending_approval: v.pendingApproval ?? null,
    message_ids: v.messageIds ?? null,
    created_at: iso(a.created_at),
    updated_at: iso(a.updated_at),
  };
}

/** What an agent secret's `value` shows: secrets are write-only over the API. */
const REDACTED = '[redacted]';
