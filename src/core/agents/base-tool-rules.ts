import type { ToolRule } from '../rules/tool-rule';
import type { AgentType } from './agent-type';

/**
 * Letta's base tool rules (agent_manager.create_agent_async, Letta 0.16.8): on create, the agent's
 * terminal tools get `exit_loop` and its other base, memory and sleep-time tools get `continue_loop`,
 * so a memory edit goes on to the answer without a heartbeat request and `send_message` ends the batch.
 */

/** Letta's terminal tools: a call ends the batch. */
const TERMINAL_TOOLS: ReadonlySet<string> = new Set([
  'send_message',
  'send_message_to_agent_async',
  'memory_finish_edits',
]);

/** Letta's BASE_TOOLS + BASE_MEMORY_TOOLS + BASE_MEMORY_TOOLS_V2/V3 + BASE_SLEEPTIME_TOOLS, by name. */
const CONTINUE_TOOLS: ReadonlySet<string> = new Set([
  'send_message',
  'conversation_search',
  'archival_memory_insert',
  'archival_memory_search',
  'core_memory_append',
  'core_memory_replace',
  'memory',
  'memory_apply_patch',
  'memory_replace',
  'memory_insert',
  'memory_rethink',
  'memory_finish_edits',
]);

/** Letta's EXCLUDE_MODEL_KEYWORDS_FROM_BASE_TOOL_RULES and INCLUDE_MODEL_KEYWORDS_BASE_TOOL_RULES (which wins). */
const EXCLUDED_MODEL_KEYWORDS = ['claude-4-sonnet', 'claude-3-5-sonnet', 'gpt-5', 'gemini-2.5-pro'];
const INCLUDED_MODEL_KEYWORDS = ['mini'];

/** Letta's `_should_exclude_model_from_base_tool_rules`: substring matches on the model name. */
export const modelExcludedFromBaseToolRules = (model: string): boolean =>
  !INCLUDED_MODEL_KEYWORDS.some((k) => model.includes(k)) &&
  EXCLUDED_MODEL_KEYWORDS.some((k) => model.includes(k));

export interface BaseToolRulesRequest {
  agent_type: AgentType;
  /** The create's `include_base_tools` (absent or null counts as true, Letta's default). */
  include_base_tools?: boolean | null;
  /** The create's `include_base_tool_rules` (absent or null: Letta decides). */
  include_base_tool_rules?: boolean | null;
  /** Whether the create gave any tool_rules (an empty list counts as none, as Letta's `not tool_rules`). */
  hasToolRules: boolean;
  /** `llm_config.model`. */
  model: string;
}

/**
 * Whether Letta adds base tool rules. letta_v1_agent defaults to none unless rules were given (Letta
 * decides this only where it adds the type's base tools); an explicit false adds none; otherwise a model
 * matching the exclusion keywords gets none (Letta's sleep-time exception has no agent type here).
 */
export function includesBaseToolRules(req: BaseToolRulesRequest): boolean {
  let flag = req.include_base_tool_rules ?? null;
  if (
    req.agent_type === 'letta_v1_agent' &&
    req.include_base_tools !== false &&
    !req.hasToolRules &&
    flag === null
  )
    flag = false;
  if (flag === false) return false;
  return !(flag === null && modelExcludedFromBaseToolRules(req.model));
}

/** The rules Letta appends to the agent's own for its tools (in the agent's tool order), or none. */
export function baseToolRules(req: BaseToolRulesRequest, tools: readonly string[]): ToolRule[] {
  if (!includesBaseToolRules(req)) return [];
  const out: ToolRule[] = [];
  for (const tool_name of tools) {
    if (TERMINAL_TOOLS.has(tool_name)) out.push({ type: 'exit_loop', tool_name });
    else if (CONTINUE_TOOLS.has(tool_name)) out.push({ type: 'continue_loop', tool_name });
  }
  return out;
}
