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
  /**
   * The model step whose turn holds the call. A call is the pair (step, tool_call_id): it is claimed once
   * per pair, so a provider that gives every response the same ids (`call_0`) does not make a new call
   * look like the replay of an old one. Absent: a call with an id of its own (start constraints, exit
   * requirements, a direct run).
   */
  stepId?: string | null;
  /**
   * The consent request the call already has (a parked call resumed after a decision). `null`: it can
   * have none yet (the model has just made it), so none is looked for. Absent: the broker looks for the
   * newest request with its tool_call_id.
   */
  consentRequestId?: string | null;
  /**
   * What the client answered for a call it ran (parked `client_required`: admitted, counted and claimed
   * then): `executeBatch` records it in its place in the turn, as if the tool had just run here.
   */
  clientResult?: ClientResult;
}

/** A client tool's result, as the client sent it back, with what its call was admitted with. */
export interface ClientResult {
  status: 'success' | 'error';
  value: string;
  /** When the call was admitted (its outcome's `startedAt`). */
  startedAt: number;
  /** The call asked for `request_heartbeat: true`. */
  heartbeat: boolean;
}

export interface ExecutionMeta {
  tenantId: string;
  agentId: string;
  runId: string;
  batchId: string;
  /** Aborted on cancellation: a running tool is asked to stop, waiting ones are not started. */
  signal?: AbortSignal;
  /** No one can be asked (a direct run, outside any batch): only a standing grant covers consent. */
  grantsOnly?: boolean;
  /** The run's lease tenure (opaque here), handed to the store's writes: none passes once it is over. */
  tenure?: string | null;
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
  | 'consent_required' // parked: a consent request is pending
  | 'client_required' // admitted, counted and claimed: the client runs it and returns the result
  | 'deferred'; // held: an earlier call of its turn that waits decides its verdict; judged once it is decided

/** The call waits (for consent, the client, or, held, for an earlier call's decision): no return yet. */
export const parksOn = (o: { kind: OutcomeKind }): boolean =>
  o.kind === 'consent_required' || o.kind === 'client_required' || o.kind === 'deferred';

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
  /**
   * The request this call already has (`ToolCallRequest.consentRequestId`): the one re-checked. `null`: a
   * new call, never looked up by its tool_call_id (an id the provider reused names an older call). Absent:
   * the newest request of the tool_call_id, if any.
   */
  requestId?: string | null;
  toolName: string;
  arguments: Record<string, unknown>;
  /** The rule's scope, else the tool name. */
  scope: string;
  timeoutMs: number;
  /** Answer `required` instead of asking a person when no grant covers the call. */
  grantsOnly?: boolean;
}

export type ConsentCheck =
  | { kind: 'granted'; grantId: string } // a standing grant covers the call
  | { kind: 'approved'; requestId: string } // a person approved this very call (resume after a decision)
  | { kind: 'denied'; reason: string; requestId?: string } // denied, or timed out (reason 'timeout')
  | { kind: 'pending'; requestId: string } // a request is (now) waiting for a person: the run parks
  | { kind: 'required' }; // grantsOnly and no grant covers it: no one was asked, not run

/** The PermissionBroker as the executor sees it. */
export interface ConsentPort {
  check(req: ConsentCheckRequest): Promise<ConsentCheck>;
}

/** Whose run writes executor state: the agent, and the run's lease tenure (ExecutionMeta.tenure). */
export interface StateWriter {
  agentId: string;
  tenure?: string | null;
}

/** Per-batch state (max calls, exclusive groups): survives heartbeats and parking for consent. */
export interface BatchState {
  callCounts: Record<string, number>;
  /**
   * Executions per tool in this batch that ran, successfully or not (required_before_exit); the name
   * is the stored one (batch state survives restarts).
   */
  succeeded?: Record<string, number>;
  /** Tools that must still run before the batch may end (requires_following_tools, once triggered). */
  mustFollow?: string[];
  createdAt: number;
  updatedAt: number;
}

/** A call remembered for dedupe: a success, or one whose outcome is unknown (timed out, stopped). */
export interface DedupeEntry {
  result: string;
  at: number;
  expiresAt: number;
  /** It did not finish: it may have taken effect, so an identical call is refused, never answered from it. */
  unknown?: true;
}

/**
 * A store may answer synchronously (the in-memory store, a warm LRU) so the executor's hot path stays
 * free of microtask hops; `await` works on both shapes.
 */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Persistent state across batches and restarts; the Nest side writes through to the database.
 * Writers get the owning tenant as a trailing argument (rows carry tenant_id); agent ids are unique anyway.
 * A run's writes also get its lease tenure (ExecutionMeta.tenure; absent: the agent's current one), for a
 * store that fences them by it: none passes once that tenure is over.
 */
export interface ExecutorStateStore {
  getDedupe(agentId: string, key: string): MaybePromise<DedupeEntry | null>;
  putDedupe(
    agentId: string,
    key: string,
    entry: DedupeEntry,
    tenantId?: string,
    tenure?: string | null,
  ): MaybePromise<void>;
  getLastExecution(agentId: string, toolName: string): MaybePromise<number | null>;
  setLastExecution(
    agentId: string,
    toolName: string,
    at: number,
    tenantId?: string,
    tenure?: string | null,
  ): MaybePromise<void>;
  loadBatch(batchId: string): MaybePromise<BatchState | null>;
  /** `writer`: the batch's agent and the writing run's tenure (a batch id names no agent). */
  saveBatch(
    batchId: string,
    state: BatchState,
    tenantId?: string,
    writer?: StateWriter,
  ): MaybePromise<void>;
  deleteBatch(batchId: string): MaybePromise<void>;
  /**
   * The batch waits (for a person's consent or a client's result), however long that takes: its state is
   * not pruned by the TTL until it is saved again (the batch went on) or deleted.
   */
  parkBatch(batchId: string): MaybePromise<void>;
  /**
   * Records that a call is about to execute; false when it already was (at most once). A call is its
   * tool_call_id within the step whose turn holds it (`stepId`, '' for a call outside any model turn).
   * `tenure`: the claiming run's (ExecutionMeta.tenure), for a store that fences claims by it.
   */
  claimToolCall(
    agentId: string,
    toolCallId: string,
    stepId: string,
    at: number,
    tenantId?: string,
    tenure?: string | null,
  ): MaybePromise<boolean>;
  /**
   * Whether the call was claimed, i.e. its tool may have started (recovery tells "started" from "not").
   * A claim stored before claims had a step (`''`) counts for the tool_call_id in any step.
   */
  isClaimed(agentId: string, toolCallId: string, stepId: string): MaybePromise<boolean>;
  /** Drops expired dedupe entries, and claims and batch state (except parked batches') older than the TTL. */
  pruneExpired(now: number, batchTtlMs: number): MaybePromise<void>;
}

// ---------------------------------------------------------------- executor state and deps

/** One executed (or cached-answered) call in a pass's history. */
export interface ToolExecution {
  toolCallId: string;
  toolName: string;
  status: 'success' | 'error';
  returnValue: string;
  at: number;
  /** Answered from the dedupe cache: nothing ran (so it meets no requires_preceding_tools). */
  cached?: true;
}

export type PassPhase = 'start' | 'running' | 'exit_requested';

/**
 * Per-pass state: created fresh by `newPass` for each entry into processing (the user message,
 * or one heartbeat continuation). The processor holds it and hands it back on every call.
 */
export interface PassState {
  batchId: string;
  /** Executions of this pass, in order (ordering rules look here). */
  history: ToolExecution[];
  /** A run_first tool has run in this pass (or the agent has none). */
  startConstraintsDone: boolean;
  /** Snapshot of what still must run before the batch may end, refreshed after each call. */
  exitRequirementsPending: string[];
  phase: PassPhase;
  /** The batch state, loaded once per pass from the store (internal cache; do not mutate). */
  batch?: BatchState;
}

export interface ExecutorLimits {
  /** Batch state left behind (no completeBatch) is dropped after this long. */
  batchTtlMs: number;
}

/** Tells the caller a tool timed out; exported so invokers can recognise the abort reason. */
export const TOOL_TIMEOUT_REASON = 'tool-timeout';
