import type { AgentRecord } from '../core/agents/agent-record';
import type { AgentToolSetup } from '../core/executor/contracts';
import type { ToolExecutor } from '../core/executor/tool-executor';
import type { ToolDefinition } from '../core/tools/tool-definition';
import type { LlmConfig, ModelProvider, ToolSchema } from '../models/model-provider';

/**
 * What the AgentProcessor needs from other modules, as small interfaces: the adapters in
 * processing.adapters.ts bind them to AgentsService, ToolsService, ModelsService, ToolExecutorService
 * and the PermissionBroker, and tests of the processor can replace any of them.
 */
export interface AgentPort {
  /** 404 NOT_FOUND when the tenant has no such agent. */
  get(tenantId: string, agentId: string): Promise<AgentRecord>;
  setLastStopReason(tenantId: string, agentId: string, reason: string): Promise<void>;
}

export interface ToolsPort {
  resolve(tenantId: string, names: string[]): Promise<ToolDefinition[]>;
}

export interface ModelsPort {
  providerFor(llm: LlmConfig): ModelProvider;
  /** The schema offered to the model (gains the optional `request_heartbeat`). */
  toolSchemaFor(def: ToolDefinition): ToolSchema;
  countTokens(text: string): number;
}

export interface ExecutorPort {
  readonly executor: ToolExecutor;
  setupFor(agent: AgentRecord, tools: ToolDefinition[]): AgentToolSetup;
}

/** A person's decision on a parked call, as the broker reports it. */
/** A decision was stored for one of the agent's requests; what it was is read back from the store. */
export interface ConsentDecisionEvent {
  tenantId: string;
  agentId: string;
}

export interface InBandApproval {
  tool_call_id: string;
  approve: boolean;
  reason?: string | null;
  grant?: { decision: string; seconds?: number; constraint?: unknown } | null;
}

/** The PermissionBroker as processing sees it. */
export interface ConsentBridge {
  onDecision(listener: (event: ConsentDecisionEvent) => void): void;
  /** Records a decision that came in band on the messages endpoint (channel `rest`). */
  decide(tenantId: string, agentId: string, approval: InBandApproval): Promise<void>;
  /** The calls among these whose consent request still waits for a decision. */
  undecided(tenantId: string, agentId: string, toolCallIds: string[]): Promise<string[]>;
  /** Denies the agent's pending requests (cancellation). */
  denyPending(
    tenantId: string,
    agentId: string,
    toolCallIds: string[],
    reason: string,
  ): Promise<void>;
}

export const AGENT_PORT = Symbol('AGENT_PORT');
export const TOOLS_PORT = Symbol('TOOLS_PORT');
export const MODELS_PORT = Symbol('MODELS_PORT');
export const EXECUTOR_PORT = Symbol('EXECUTOR_PORT');
export const CONSENT_BRIDGE = Symbol('CONSENT_BRIDGE');
