import type { EntityManager } from 'typeorm';
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
  /**
   * A run of the agent ended (its stop reason; `startedAt` gives Letta's last_run_duration_ms). False
   * when the agent was deleted meanwhile (deleting an agent stops its runs, which then end).
   */
  setLastStopReason(
    tenantId: string,
    agentId: string,
    reason: string,
    startedAt?: number | null,
  ): Promise<boolean>;
  /** Drops the agent's cached record (this instance has just taken the agent: it may be stale). */
  forget(agentId: string): void;
}

export interface ToolsPort {
  resolve(tenantId: string, names: string[]): Promise<ToolDefinition[]>;
}

export interface ModelsPort {
  providerFor(llm: LlmConfig, tenantId: string): ModelProvider;
  /** The schema offered to the model (with `heartbeat`, it gains the optional `request_heartbeat`). */
  toolSchemaFor(def: ToolDefinition, heartbeat: boolean): ToolSchema;
  countTokens(text: string): number;
  /** Whether the model accepts image content (its provider's `vision_models`). */
  acceptsImages(llm: LlmConfig): boolean;
  /** The llm_config of a model handle (`provider/model`), or why no provider serves it. */
  fromHandle(handle: string): { ok: LlmConfig } | { error: string };
}

export interface ExecutorPort {
  readonly executor: ToolExecutor;
  setupFor(agent: AgentRecord, tools: ToolDefinition[]): AgentToolSetup;
  /** Drops the executor state cached for the agent and these batches (its lease was just taken). */
  forgetAgent(agentId: string, batchIds: string[]): void;
}

/** A decision was stored for one of the agent's requests (of this call); what it was is read back from the store. */
export interface ConsentDecisionEvent {
  tenantId: string;
  agentId: string;
  toolCallId: string;
  requestId: string;
}

/**
 * A call as the broker finds its request: by the request it parked with when known (a ParkedCall), else
 * the newest request of its tool_call_id (an id a provider reused may have several).
 */
export interface CallRef {
  tool_call_id: string;
  request_id?: string | null;
}

export interface InBandApproval {
  tool_call_id: string;
  approve: boolean;
  reason?: string | null;
  grant?: { decision: string; seconds?: number; constraint?: unknown } | null;
  /** Letta's `ToolReturn` form: the client ran a client tool; this is its result. */
  tool_return?: string;
  status?: 'success' | 'error';
}

/** A consent request as a losing cancellation is told about it (status `pending`: an in-band answer is on its way). */
export interface DecidedCall {
  request_id: string;
  status: string;
  tool_call_id: string;
  tool_name: string;
  decision: string | null;
  decided_by: string | null;
  reason: string | null;
}

/** The PermissionBroker as processing sees it. */
export interface ConsentBridge {
  /**
   * Decisions as they are stored: `inTransaction` runs in the decision's own transaction once it won (it
   * may run more than once), `after` once it committed, with what the committed `inTransaction` returned.
   */
  onDecision<T>(follower: {
    inTransaction(event: ConsentDecisionEvent, em: EntityManager): Promise<T>;
    after(event: ConsentDecisionEvent, written: T): void;
  }): void;
  /**
   * Records a decision that came in band on the messages endpoint (channel `rest`), on the parked call's
   * own request (`requestId`; else the newest of its tool_call_id).
   */
  decide(
    tenantId: string,
    agentId: string,
    approval: InBandApproval,
    requestId?: string | null,
  ): Promise<void>;
  /** The calls among these whose consent request still waits for a decision. */
  undecided(tenantId: string, agentId: string, toolCallIds: string[]): Promise<string[]>;
  /**
   * Recovery: the calls among these whose request, made by run `runId`, a person approved (the run died
   * before it parked on them).
   */
  approvedFor(
    tenantId: string,
    agentId: string,
    runId: string,
    toolCallIds: string[],
  ): Promise<CallRef[]>;
  /** Recovery: approvals used up by calls whose tools never started count again. */
  restoreUnstartedApprovals(tenantId: string, agentId: string, calls: CallRef[]): Promise<void>;
  /**
   * A cancellation racing the decisions: denies every request of these calls and runs `claim` in one
   * transaction, or changes nothing and answers the requests as they stand (a decision came first).
   */
  cancelPending(
    tenantId: string,
    agentId: string,
    calls: CallRef[],
    reason: string,
    claim: (em: EntityManager) => Promise<boolean>,
  ): Promise<{ cancelled: true } | { cancelled: false; requests: DecidedCall[] }>;
  /** The requests of these calls, decided or not. */
  requests(tenantId: string, agentId: string, calls: CallRef[]): Promise<DecidedCall[]>;
  /** Denies the agent's pending requests (an agent being deleted). */
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
