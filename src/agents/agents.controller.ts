import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
} from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { badRequest } from '../common/domain-error';
import { oldestFirst, pageOfList } from '../common/list-page';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { toToolResponse } from '../tools/tool-response.mapper';
import { toAgentResponse } from './agent-response.mapper';
import { toSecretResponse } from '../secrets/secrets.service';
import { AgentsService } from './agents.service';

type Json = Record<string, unknown>;

/** Reads `{requires_approval}`, or the SDK's `{body_requires_approval}`; also `?requires_approval=`. */
function approvalFlag(body: unknown, query: Json): boolean {
  const b = (body ?? {}) as Json;
  const v = b.requires_approval ?? b.body_requires_approval ?? query.requires_approval;
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  throw badRequest('VALIDATION_FAILED', 'requires_approval: must be true or false', {
    problems: [{ path: 'requires_approval', message: 'must be true or false' }],
  });
}

@Controller('v1/agents')
export class AgentsController {
  constructor(
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(200) // as Letta answers
  async create(@Tenant() tenant: string, @Body() body: unknown): Promise<Json> {
    return toAgentResponse(await this.agents.create(tenant, body));
  }

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Json): Promise<Json[]> {
    return (await this.agents.list(tenant, query)).map(toAgentResponse);
  }

  @Get(':id')
  async get(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Json,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.retrieve(tenant, id, query));
  }

  @Patch(':id')
  async update(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.update(tenant, id, body));
  }

  /** Letta's recompile answers the compiled system prompt as a JSON string (`dry_run` changes nothing here). */
  @Post(':id/recompile')
  @HttpCode(200)
  @Header('content-type', 'application/json; charset=utf-8')
  async recompile(@Tenant() tenant: string, @Param('id') id: string): Promise<string> {
    return JSON.stringify(await this.agents.systemPrompt(tenant, id));
  }

  @Delete(':id')
  @HttpCode(200)
  async delete(@Tenant() tenant: string, @Param('id') id: string): Promise<Json> {
    await this.agents.delete(tenant, id);
    return { message: `Agent id=${id} successfully deleted` };
  }

  /** Letta's agent-level secrets: names only, never values. */
  @Get(':id/secrets')
  async secrets(@Tenant() tenant: string, @Param('id') id: string): Promise<Json[]> {
    return (await this.agents.secretNames(tenant, id)).map(toSecretResponse);
  }

  @Get(':id/tools')
  async tools(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Json,
  ): Promise<Json[]> {
    // Letta's order: by when each tool was made (not attached), newest first unless `order=asc`
    const tools = oldestFirst(await this.agents.agentTools(tenant, id), (t) => t.created_at);
    return pageOfList(tools, query, this.config.limits, 'a tool', 'desc').map(toToolResponse);
  }

  @Patch(':id/tools/approval/:toolName')
  async approval(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('toolName') toolName: string,
    @Body() body: unknown,
    @Query() query: Json,
  ): Promise<Json> {
    return toAgentResponse(
      await this.agents.setToolApproval(tenant, id, toolName, approvalFlag(body, query)),
    );
  }

  @Patch(':id/tools/attach/:toolId')
  async attach(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('toolId') toolId: string,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.attachTool(tenant, id, toolId));
  }

  @Patch(':id/identities/attach/:identityId')
  async attachIdentity(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('identityId') identityId: string,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.attachIdentity(tenant, id, identityId));
  }

  @Patch(':id/identities/detach/:identityId')
  async detachIdentity(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('identityId') identityId: string,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.detachIdentity(tenant, id, identityId));
  }

  @Patch(':id/tools/detach/:toolId')
  async detach(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('toolId') toolId: string,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.detachTool(tenant, id, toolId));
  }
}

/** Letta's `GET /v1/identities/{id}/agents`: here, since it answers agents. */
@Controller('v1/identities')
export class IdentityAgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get(':id/agents')
  async list(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Json,
  ): Promise<Json[]> {
    return (await this.agents.identityAgents(tenant, id, query)).map(toAgentResponse);
  }
}
