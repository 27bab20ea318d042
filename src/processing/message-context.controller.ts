import { Body, Controller, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { toAgentResponse } from '../agents/agent-response.mapper';
import { AgentsService } from '../agents/agents.service';
import { Tenant } from '../auth/tenant.guard';
import { validationFailed } from '../common/domain-error';
import { assertPrefixedId } from '../common/ids';
import {
  CompactionResult,
  MessageContextService,
  parseCompactionRequest,
} from './message-context.service';

/** Letta's `PATCH /v1/agents/{id}/reset-messages` and `POST /v1/agents/{id}/summarize`. */
@Controller('v1/agents/:agentId')
export class MessageContextController {
  constructor(
    private readonly contexts: MessageContextService,
    private readonly agents: AgentsService,
  ) {}

  /** Answers the agent (Letta's AgentState); `add_default_initial_messages` adds nothing here. */
  @Patch('reset-messages')
  async reset(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
  ): Promise<Record<string, unknown>> {
    assertPrefixedId('agent', 'agent', agentId);
    parseReset(body);
    await this.contexts.reset(tenant, agentId, null);
    return toAgentResponse(await this.agents.get(tenant, agentId));
  }

  @Post('summarize')
  @HttpCode(200)
  summarize(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
  ): Promise<CompactionResult> {
    assertPrefixedId('agent', 'agent', agentId);
    return this.contexts.compact(tenant, agentId, null, parseCompactionRequest(body));
  }
}

function parseReset(body: unknown): void {
  if (body === undefined || body === null) return;
  const flag = (body as Record<string, unknown>).add_default_initial_messages;
  if (typeof body !== 'object' || Array.isArray(body))
    throw validationFailed([{ path: '', message: 'body must be a JSON object' }]);
  if (flag !== undefined && flag !== null && typeof flag !== 'boolean')
    throw validationFailed([
      { path: 'add_default_initial_messages', message: 'must be a boolean' },
    ]);
}
