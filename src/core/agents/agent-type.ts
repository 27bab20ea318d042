/**
 * Letta's `agent_type`: which base tools an agent gets and how its loop goes on after a tool call.
 * Letta's server (agent_manager.create_agent_async, agents/agent_loop.py) is the reference.
 */
export const AGENT_TYPES = [
  'memgpt_agent',
  'memgpt_v2_agent',
  'letta_v1_agent',
  'react_agent',
  'workflow_agent',
] as const;

export type AgentType = (typeof AGENT_TYPES)[number];

/** Letta's other types need sleep-time groups or voice, which this server does not have. */
export const UNSUPPORTED_AGENT_TYPES = [
  'split_thread_agent',
  'sleeptime_agent',
  'voice_convo_agent',
  'voice_sleeptime_agent',
] as const;

export const isAgentType = (v: unknown): v is AgentType =>
  typeof v === 'string' && (AGENT_TYPES as readonly string[]).includes(v);

/** The built-ins each type gets unless created with `include_base_tools: false` (Letta's sets, in its order). */
export const BASE_TOOLS_BY_TYPE: Record<AgentType, readonly string[]> = {
  memgpt_agent: [
    'send_message',
    'core_memory_append',
    'core_memory_replace',
    'conversation_search',
  ],
  memgpt_v2_agent: ['send_message', 'memory_replace', 'memory_insert', 'conversation_search'],
  letta_v1_agent: ['memory_replace', 'memory_insert', 'conversation_search'],
  react_agent: [],
  workflow_agent: [],
};

/**
 * letta_v1_agent (Letta's LettaAgentV3) has no heartbeats: the loop goes on after every tool call that
 * ran and ends when the model answers without one. Every other type runs Letta's MemGPT loop
 * (LettaAgentV2): a tool call ends the batch unless it asked for a heartbeat or a rule continues it.
 */
export const continuesAfterTools = (t: AgentType): boolean => t === 'letta_v1_agent';

/** Only the heartbeat loop offers the model `request_heartbeat`. */
export const offersHeartbeat = (t: AgentType): boolean => !continuesAfterTools(t);

/** The system prompt of an agent created without one: it names send_message only where the type has it. */
export function defaultSystemPrompt(t: AgentType): string {
  return BASE_TOOLS_BY_TYPE[t].includes('send_message')
    ? 'You are a helpful assistant. Use the tools you have; answer the user with send_message.'
    : 'You are a helpful assistant. Use the tools you have; answer the user with a plain reply.';
}
