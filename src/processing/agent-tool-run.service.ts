import { Inject, Injectable } from '@nestjs/common';
import { conflict, DomainError, validationFailed } from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR } from '../common/ids';
import { nulBytePaths } from '../core/agents/nul-bytes';
import type { ToolOutcome } from '../core/executor/contracts';
import type { IdGenerator } from '../core/ports';
import { MessagingService } from './messaging.service';
import {
  AGENT_PORT,
  type AgentPort,
  EXECUTOR_PORT,
  type ExecutorPort,
  TOOLS_PORT,
  type ToolsPort,
} from './processing.ports';

/** Letta's ToolExecutionResult, plus what the executor decided (`outcome`, `error`, `grant_id`). */
export interface ToolRunResult {
  status: 'success' | 'error';
  func_return: string | null;
  stdout: string[];
  stderr: string[];
  sandbox_config_fingerprint: null;
  agent_state: null;
  tool_call_id: string;
  outcome: 'executed' | 'cached' | 'refused' | 'timeout';
  error: { type: string; message: string } | null;
  grant_id: string | null;
}

/**
 * Letta's `POST /v1/agents/{id}/tools/{name}/run`: one call of an attached tool with given arguments,
 * through the ToolExecutor like a model's call, in the agent's turn (never beside a batch's calls). It is
 * a batch and a pass of its own: counts and exclusive groups start empty, ordering rules see no earlier
 * call (a `run_first` agent's other tools, or a tool needing a predecessor, are refused), and cooldowns,
 * dedupe and claims are the agent's persistent ones. Nobody can be asked for consent here, so a tool
 * that requires it runs only under a standing grant; otherwise 409 CONSENT_REQUIRED, and nothing runs.
 */
@Injectable()
export class AgentToolRunService {
  constructor(
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
    @Inject(TOOLS_PORT) private readonly tools: ToolsPort,
    @Inject(EXECUTOR_PORT) private readonly exec: ExecutorPort,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly messaging: MessagingService,
  ) {}

  async run(
    tenantId: string,
    agentId: string,
    toolName: string,
    body: unknown,
  ): Promise<ToolRunResult> {
    assertPrefixedId('agent', 'agent', agentId);
    const args = parseArgs(body);
    await this.attached(tenantId, agentId, toolName); // 404s before waiting for the agent's turn
    const outcome = await this.messaging.inAgentTurn(tenantId, agentId, async () => {
      const agent = await this.attached(tenantId, agentId, toolName);
      const setup = this.exec.setupFor(agent, await this.tools.resolve(tenantId, agent.tools));
      const batchId = this.ids.snowflake();
      const pass = this.exec.executor.newPass(setup, batchId);
      const call = { toolCallId: this.ids.prefixed('call'), name: toolName, arguments: args };
      const meta = {
        tenantId,
        agentId,
        runId: this.ids.prefixed('toolrun'),
        batchId,
        grantsOnly: true,
      };
      try {
        return await this.exec.executor.execute(setup, pass, call, meta);
      } finally {
        await this.exec.executor.completeBatch(batchId);
      }
    });
    if (outcome.kind === 'consent_required' || outcome.kind === 'client_required')
      throw conflict(
        'CONSENT_REQUIRED',
        `${toolName} needs a person's consent and no standing grant covers this call: a direct run cannot wait for one. Grant it (POST /v1/consent/requests/{id}/decision with approve_for_duration or approve_for_scope) or let the agent call it in a conversation`,
        { tool_name: toolName },
      );
    return toResult(outcome);
  }

  private async attached(tenantId: string, agentId: string, toolName: string) {
    const agent = await this.agents.get(tenantId, agentId);
    if (!agent.tools.includes(toolName))
      throw new DomainError(
        'not_found',
        'TOOL_NOT_ATTACHED',
        `tool ${JSON.stringify(toolName.slice(0, 200))} not found or not attached to agent ${agentId}`,
        { tool_name: toolName.slice(0, 200) },
      );
    return agent;
  }
}

function parseArgs(body: unknown): Record<string, unknown> {
  const b = body ?? {};
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObj(b)) throw validationFailed([{ path: '(body)', message: 'must be an object' }]);
  const args = b.args ?? {};
  if (!isObj(args))
    throw validationFailed([{ path: 'args', message: 'must be an object of argument → value' }]);
  const nul = nulBytePaths(args, 'args');
  if (nul.length) throw validationFailed(nul);
  return args;
}

function toResult(o: ToolOutcome): ToolRunResult {
  const ok = o.status === 'success';
  return {
    status: o.status,
    // as Letta: no result when the call failed; the reason is in stderr
    func_return: ok ? o.returnValue : null,
    stdout: [],
    stderr: ok ? [] : [o.returnValue],
    sandbox_config_fingerprint: null,
    agent_state: null,
    tool_call_id: o.toolCallId,
    outcome: o.kind as ToolRunResult['outcome'],
    error: o.error ? { type: o.error.type, message: o.error.message } : null,
    grant_id: o.grantId ?? null,
  };
}
