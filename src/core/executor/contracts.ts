import type { ToolDefinition } from '../tools/tool-definition';
import type { ToolRule } from '../rules/tool-rule';

/**
 * The contract between the ToolExecutor (core), the AgentProcessor (processing) and the
 * PermissionBroker (permissions). Pure types: every side effect goes through a port below.
 */

/** Everything the executor knows about one agent's tools. */
export interface AgentToolSetup {
  tenantId: string;
  agentId: string;
  /** The agent's tools, built-ins included. */
  tools: ToolDefinition[];
  rules: ToolRule[];
  settings: ExecutorSettings;
}

export interface ExecutorSettings {
  toolTimeoutMs: number;
  consentTimeoutMs: number;
  /** Default dedupe window for side_effecting and privileged tools without a dedupe rule (0 = off). */
  dedupeWindowMs: number;
}

/** One call as the model made it. `arguments` is the parsed object, or the raw text when it was not valid JSON. */
export interface ToolCallRequest {
  toolCallId: string;
  name: string;
  arguments: Record<string, unknown> | string;
}

export interface ExecutionMeta {
  tenantId: string;
  agentId: string;
  runId: string;
  batchId: string;
  /** Aborted on cancellation: a running tool is asked to stop, waiting ones are not started. */
  signal?: AbortSignal;
}

export type ToolErrorType =
  | 'NotFound'
  | 'RuleViolation'
  | 'PermissionDenied'
  | 'Timeout'
  | 'Deduplicated'
  | 'InvalidArguments'
  | 'AlreadyExecuted'
  | 'ToolError'
  | 'Cancelled';

export type OutcomeKind =
  | 'executed' // the tool ran (status tells success or error)
  | 'cached' // dedupe return_cached: the earlier result, not run again
  | 'refused' // a rule, dedupe, bad arguments or a denial stopped it; never ran
  | 'timeout' // ran and did not finish in time
  | 'consent_required'; // parked: a consent request is pending

export interface ToolOutcome {
  toolCallId: string;
  toolName: string;
  /** The arguments as the tool got (or would get) them: prefilled start args applied, request_heartbeat removed. */
  arguments: Record<string, unknown>;
  kind: OutcomeKind;
  status: 'success' | 'error';
  /** The text the model receives as the tool return. */
  returnValue: string;
  error?: { type: ToolErrorType; message: string; rule?: ToolRule };
  /** The call ran and asked for `request_heartbeat: true`. */
  requestHeartbeat: boolean;
  /** The tool has a continue_loop rule. */
  continueLoop: boolean;
  /** The tool has an exit_loop rule and ran. */
  exitLoop: boolean;
  /** The standing grant that covered a consent-requiring call. */
  grantId?: string;
  /** Set when kind is consent_required. */
  consentRequestId?: string;
  startedAt?: number;
  finishedAt?: number;
}

/** What the executor offers the next model call. */
export interface AllowedTools {
  /** Names of the tools that may be offered now. */
  tools: string[];
  /** The one tool to force (tool_choice), when a rule narrows the choice to exactly one. */
  force?: string;
}

// ---------------------------------------------------------------- ports

/** Runs a tool's implementation (built-in or http). Throwing counts as an error return. */
export interface ToolInvoker {
  invoke(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    ctx: {
      tenantId: string;
      agentId: string;
      runId: string;
      toolCallId: string;
      signal: AbortSignal;
    },
  ): Promise<{ status: 'success' | 'error'; value: string }>;
}

export interface ConsentCheckRequest {
  tenantId: string;
  agentId: string;
  runId: string;
  batchId: string;
  toolCallId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  /** The rule's scope, else the tool name. */
  scope: string;
  timeoutMs: number;
}

export type ConsentCheck =
  | { kind: 'granted'; grantId: string } // a standing grant covers the call
  | { kind: 'approved'; requestId: string } // a person approved this very tool_call_id (resume after a decision)
  | { kind: 'denied'; reason: string; requestId?: string } // denied, or timed out (reason 'timeout')
  | { kind: 'pending'; requestId: string }; // a request is (now) waiting for a person: the run parks

/** The PermissionBroker as the executor sees it. */
export interface ConsentPort {
  check(req: ConsentCheckRequest): Promise<ConsentCheck>;
}

/** Per-batch state (max calls, exclusive groups): survives heartbeats and parking for consent. */
export interface BatchState {
  callCounts: Record<string, number>;
  exclusiveGroups: Record<string, string>;
  createdAt: number;
  updatedAt: number;
}

/** Persistent state across batches and restarts; the Nest side writes through to the database. */
export interface ExecutorStateStore {
  getDedupe(
    agentId: string,
    key: string,
  ): Promise<{ result: string; at: number; expiresAt: number } | null>;
  putDedupe(
    agentId: string,
    key: string,
    entry: { result: string; at: number; expiresAt: number },
  ): Promise<void>;
  getLastExecution(agentId: string, toolName: string): Promise<number | null>;
  setLastExecution(agentId: string, toolName: string, at: number): Promise<void>;
  loadBatch(batchId: string): Promise<BatchState | null>;
  saveBatch(batchId: string, state: BatchState): Promise<void>;
  deleteBatch(batchId: string): Promise<void>;
  /** Records that a tool_call_id is about to execute; false when it already was (at most once). */
  claimToolCall(agentId: string, toolCallId: string, at: number): Promise<boolean>;
  pruneExpired(now: number, batchTtlMs: number): Promise<void>;
}
