import type { Provider } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import type { AgentRecord } from '../core/agents/agent-record';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { ModelsService } from '../models/models.service';
import type { ConsentRequestEntity } from '../permissions/consent.entities';
import {
  type CallRef as BrokerCallRef,
  type ConsentResolved,
  PermissionBrokerService,
} from '../permissions/permission-broker.service';
import { ToolExecutorService } from '../rules/tool-executor.service';
import { ToolsService } from '../tools/tools.service';
import {
  AGENT_PORT,
  AgentPort,
  CallRef,
  CONSENT_BRIDGE,
  ConsentBridge,
  ConsentDecisionEvent,
  DecidedCall,
  EXECUTOR_PORT,
  ExecutorPort,
  MODELS_PORT,
  ModelsPort,
  TOOLS_PORT,
  ToolsPort,
} from './processing.ports';

/** Binds the processor's ports to the modules that own the behaviour. */
export const PROCESSING_ADAPTERS: Provider[] = [
  {
    provide: AGENT_PORT,
    inject: [AgentsService],
    useFactory: (agents: AgentsService): AgentPort => ({
      get: (tenantId, agentId) => agents.getForTenant(tenantId, agentId),
      setLastStopReason: (tenantId, agentId, reason, startedAt) =>
        agents.setLastStopReason(tenantId, agentId, reason, startedAt ?? null),
      forget: (agentId) => agents.forget(agentId),
    }),
  },
  {
    provide: TOOLS_PORT,
    inject: [ToolsService],
    useFactory: (tools: ToolsService): ToolsPort => ({
      resolve: (tenantId, names) => tools.resolveAgentTools(tenantId, names),
    }),
  },
  {
    provide: MODELS_PORT,
    inject: [ModelsService],
    useFactory: (models: ModelsService): ModelsPort => ({
      providerFor: (llm, tenantId) => models.providerFor(llm, tenantId),
      toolSchemaFor: (def, heartbeat) => models.toolSchemaFor(def, heartbeat),
      countTokens: (text) => models.countTokens(text),
      acceptsImages: (llm) => models.acceptsImages(llm),
      fromHandle: (handle) => models.fromHandle(handle),
    }),
  },
  {
    provide: EXECUTOR_PORT,
    inject: [ToolExecutorService],
    useFactory: (svc: ToolExecutorService): ExecutorPort => ({
      executor: svc.executor,
      setupFor: (agent: AgentRecord, tools: ToolDefinition[]) => ({
        tenantId: agent.tenant_id,
        agentId: agent.id,
        tools,
        rules: agent.tool_rules,
        settings: svc.settingsFor(agent.tool_executor),
      }),
      forgetAgent: (agentId, batchIds) => svc.store.forgetAgent(agentId, batchIds),
    }),
  },
  {
    provide: CONSENT_BRIDGE,
    inject: [PermissionBrokerService],
    useFactory: (broker: PermissionBrokerService): ConsentBridge => {
      return {
        // cancellation denials are not decisions (the broker does not report them here): MessagingService.cancel resumes
        onDecision: (follower) => {
          broker.followDecisions({
            write: (e, em) => follower.inTransaction(toDecisionEvent(e), em),
            after: (e, written) => follower.after(toDecisionEvent(e), written),
          });
        },
        decide: async (tenantId, agentId, a, requestId) => {
          await broker.decideByToolCall(
            tenantId,
            agentId,
            a.tool_call_id,
            { approve: a.approve, reason: a.reason ?? null, grant: a.grant ?? null },
            'rest',
            requestId,
          );
        },
        undecided: (tenantId, agentId, toolCallIds) =>
          broker.undecidedCalls(tenantId, agentId, toolCallIds),
        approvedFor: async (tenantId, agentId, runId, toolCallIds) =>
          (
            await broker.requestsForCalls(
              tenantId,
              agentId,
              toolCallIds.map((toolCallId) => ({ toolCallId })),
            )
          )
            .filter((r) => r.runId === runId && r.status === 'approved')
            .map((r) => ({ tool_call_id: r.toolCallId, request_id: r.id })),
        restoreUnstartedApprovals: (tenantId, agentId, calls) =>
          broker.restoreUnstartedApprovals(tenantId, agentId, calls.map(toCallRef)),
        cancelPending: async (tenantId, agentId, calls, reason, claim) => {
          const r = await broker.cancelPending(
            tenantId,
            agentId,
            calls.map(toCallRef),
            reason,
            claim,
          );
          return r.cancelled ? r : { cancelled: false, requests: r.requests.map(toDecidedCall) };
        },
        requests: async (tenantId, agentId, calls) =>
          (await broker.requestsForCalls(tenantId, agentId, calls.map(toCallRef))).map(
            toDecidedCall,
          ),
        denyPending: async (tenantId, agentId, toolCallIds, reason) => {
          await broker.denyPendingForCalls(tenantId, agentId, toolCallIds, reason);
        },
      };
    },
  },
];

function toDecisionEvent(e: ConsentResolved): ConsentDecisionEvent {
  return {
    tenantId: e.tenantId,
    agentId: e.agentId,
    toolCallId: e.toolCallId,
    requestId: e.requestId,
  };
}

function toCallRef(c: CallRef): BrokerCallRef {
  return { toolCallId: c.tool_call_id, requestId: c.request_id };
}

function toDecidedCall(r: ConsentRequestEntity): DecidedCall {
  return {
    request_id: r.id,
    status: r.status,
    tool_call_id: r.toolCallId,
    tool_name: r.toolName,
    decision: r.decision,
    decided_by: r.decidedBy,
    reason: r.decisionReason,
  };
}
