import { Controller, Delete, Get, Inject, Param, Query } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { assertPrefixedId } from '../common/ids';
import { validationFailed, type ValidationProblem } from '../common/domain-error';
import { readPageQuery } from '../common/list-page';
import { pageBounds } from '../common/page-limit';
import { toGrantResponse } from './consent.mappers';
import { PermissionBrokerService } from './permission-broker.service';

/** Standing grants: listed per agent or tenant-wide, revoked by id (the next call asks again). */
@Controller('v1')
export class GrantsController {
  constructor(
    private readonly broker: PermissionBrokerService,
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Newest first by default; Letta's page parameters (`limit` ≤ limits.max_page_size, `after`, `before`, `order`). */
  @Get('agents/:id/grants')
  async list(
    @Tenant() tenantId: string,
    @Param('id') agentId: string,
    @Query() query: Record<string, unknown>,
  ) {
    assertPrefixedId('agent', 'agent', agentId);
    const problems: ValidationProblem[] = [];
    const page = readPageQuery(query, problems, 100, this.config.limits);
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    await this.agents.getForTenant(tenantId, agentId); // 404 for another tenant's agent
    return (await this.broker.listGrants(tenantId, agentId, page)).map(toGrantResponse);
  }

  /** Every grant of the tenant (or one agent's), newest first: the console's grants page in one request. */
  @Get('grants')
  async listAll(
    @Tenant() tenantId: string,
    @Query('agent_id') agentId?: string,
    @Query('limit') limit?: string,
  ) {
    if (agentId !== undefined) assertPrefixedId('agent', 'agent', agentId);
    const rows = await this.broker.listTenantGrants(tenantId, {
      agentId,
      ...pageBounds(limit, this.config.limits.max_page_size, this.config.limits),
    });
    return rows.map(toGrantResponse);
  }

  @Delete('grants/:id')
  async revoke(@Tenant() tenantId: string, @Param('id') id: string) {
    assertPrefixedId('grant', 'grant', id);
    return toGrantResponse(await this.broker.revokeGrant(tenantId, id, 'rest'));
  }
}
