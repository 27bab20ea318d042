import { Logger, type Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { AgentsService } from '../agents/agents.service';
import { CLOCK } from '../common/clock';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { AgentRecord } from '../core/agents/agent-record';
import type { ConsentPort, ExecutorSettings, ToolInvoker } from '../core/executor/contracts';
import { InMemoryStateStore } from '../core/executor/in-memory-state-store';
import { ToolExecutor } from '../core/executor/tool-executor';
import type { Clock } from '../core/ports';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { ModelsService } from '../models/models.service';
import { CONSENT_PORT, TOOL_INVOKER } from '../rules/tokens';
import { ToolsService } from '../tools/tools.service';
import {
  AGENT_PORT,
  AgentPort,
  CONSENT_BRIDGE,
  ConsentBridge,
  ConsentDecisionEvent,
  EXECUTOR_PORT,
  ExecutorPort,
  MODELS_PORT,
  ModelsPort,
  TOOLS_PORT,
  ToolsPort,
} from './processing.ports';

/** What processing uses of the PermissionBroker (src/permissions). */
interface BrokerLike {
  onDecision(
    listener: (e: ConsentDecisionEvent & { cause: string; reason: string | null }) => void,
  ): unknown;
  decideByToolCall(
    tenantId: string,
    agentId: string,
    toolCallId: string,
    d: { approve: boolean; reason?: string | null; grant?: unknown },
    channel: 'rest',
  ): Promise<unknown>;
  denyPendingForCalls(
    tenantId: string,
    agentId: string,
    toolCallIds: string[],
    reason: string,
  ): Promise<unknown>;
}

/** What processing uses of the ToolExecutorService (src/rules). */
interface ExecutorServiceLike {
  executor: ToolExecutor;
  settingsFor(overrides: AgentRecord['tool_executor']): ExecutorSettings;
}

/** A provider looked up by class name anywhere in the app, if that module is there. */
function lookup<T>(ref: ModuleRef, path: string, name: string): T | null {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path) as Record<string, unknown>;
    return ref.get(mod[name] as new () => T, { strict: false });
  } catch {
    return null;
  }
}

const secondsToSettings = (s: AgentRecord['tool_executor']): ExecutorSettings => ({
  toolTimeoutMs: s.tool_timeout_seconds * 1000,
  consentTimeoutMs: s.consent_timeout_seconds * 1000,
  dedupeWindowMs: s.dedupe_window_seconds * 1000,
});

/** Fails closed: without the permissions module, a call that needs consent is denied. */
const DENY_ALL: ConsentPort = {
  check: () => Promise.resolve({ kind: 'denied', reason: 'no permission broker configured' }),
};

/** Binds the processor's ports to the modules that own the behaviour. */
export const PROCESSING_ADAPTERS: Provider[] = [
  {
    provide: AGENT_PORT,
    inject: [AgentsService],
    useFactory: (agents: AgentsService): AgentPort => ({
      get: (tenantId, agentId) => agents.getForTenant(tenantId, agentId),
      setLastStopReason: (tenantId, agentId, reason) =>
        agents.setLastStopReason(tenantId, agentId, reason),
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
      providerFor: (llm) => models.providerFor(llm),
      toolSchemaFor: (def) => models.toolSchemaFor(def),
      countTokens: (text) => models.countTokens(text),
    }),
  },
  {
    provide: EXECUTOR_PORT,
    inject: [ModuleRef, APP_CONFIG, CLOCK, TOOL_INVOKER],
    useFactory: (
      ref: ModuleRef,
      config: AppConfig,
      clock: Clock,
      invoker: ToolInvoker,
    ): ExecutorPort => {
      const svc = lookup<ExecutorServiceLike>(
        ref,
        '../rules/tool-executor.service',
        'ToolExecutorService',
      );
      let executor = svc?.executor;
      if (!executor) {
        new Logger('Processing').warn('ToolExecutorService not found: using an in-memory executor');
        executor = new ToolExecutor({
          clock,
          store: new InMemoryStateStore(),
          invoker,
          consent: lookupConsentPort(ref) ?? DENY_ALL,
          limits: { batchTtlMs: config.tool_executor.batch_state_ttl_seconds * 1000 },
        });
      }
      const settingsFor = (agent: AgentRecord) =>
        svc ? svc.settingsFor(agent.tool_executor) : secondsToSettings(agent.tool_executor);
      return {
        executor,
        settingsFor,
        setupFor: (agent: AgentRecord, tools: ToolDefinition[]) => ({
          tenantId: agent.tenant_id,
          agentId: agent.id,
          tools,
          rules: agent.tool_rules,
          settings: settingsFor(agent),
        }),
      };
    },
  },
  {
    provide: CONSENT_BRIDGE,
    inject: [ModuleRef],
    useFactory: (ref: ModuleRef): ConsentBridge => {
      const broker = lookup<BrokerLike>(
        ref,
        '../permissions/permission-broker.service',
        'PermissionBrokerService',
      );
      return {
        onDecision: (listener) => {
          broker?.onDecision((e) => {
            // a cancellation resumes through MessagingService.cancel itself
            if (e.cause === 'cancelled') return;
            listener({
              tenantId: e.tenantId,
              agentId: e.agentId,
              toolCallId: e.toolCallId,
              requestId: e.requestId,
              approve: e.approve,
              reason: e.reason,
            });
          });
        },
        decide: async (tenantId, agentId, a) => {
          await broker?.decideByToolCall(
            tenantId,
            agentId,
            a.tool_call_id,
            { approve: a.approve, reason: a.reason ?? null, grant: a.grant ?? null },
            'rest',
          );
        },
        denyPending: async (tenantId, agentId, toolCallIds, reason) => {
          await broker?.denyPendingForCalls(tenantId, agentId, toolCallIds, reason);
        },
      };
    },
  },
];

function lookupConsentPort(ref: ModuleRef): ConsentPort | null {
  try {
    return ref.get<ConsentPort>(CONSENT_PORT, { strict: false });
  } catch {
    return null;
  }
}
