import type { MemoryBlock } from '../core/agents/agent-record';
import type { LlmConfig } from '../models/model-provider';
import { toToolResponse } from '../tools/tool-response.mapper';
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
  const blocks = a.blocks.map(toBlockResponse);
  return {
    id: a.id,
    name: a.name,
    system: a.system,
    description: a.description,
    agent_type: 'letta_v1_agent',
    tools: v.tools.map(toToolResponse),
    tool_rules: a.tool_rules,
    memory: { blocks },
    // fields Letta's AgentState requires: the blocks again at the top level, and no data sources here
    blocks,
    sources: [],
    llm_config: safeLlmConfig(a.llm_config),
    model: a.model,
    tags: a.tags,
    metadata: a.metadata,
    tool_executor: a.tool_executor,
    model_script: a.model_script,
    max_steps: a.max_steps,
    budgets: a.budgets,
    client_tools: a.client_tools,
    source: a.source,
    last_stop_reason: a.last_stop_reason,
    pending_approval: v.pendingApproval ?? null,
    created_at: iso(a.created_at),
    updated_at: iso(a.updated_at),
  };
}
