import { Controller, Delete, Get, Param } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { Tenant } from '../auth/tenant.guard';
import { assertPrefixedId } from '../common/ids';
import { toGrantResponse } from './consent.mappers';
import { PermissionBrokerService } from './permission-broker.service';

/** Standing grants: listed per agent, revoked by id (the next call asks again). */
@Controller('v1')
export class GrantsController {
  constructor(
    private readonly broker: PermissionBrokerService,
    private readonly agents: AgentsService,
  ) {}

  @Get('agents/:id/grants')
  async list(@Tenant() tenantId: string, @Param('id') agentId: string) {
    assertPrefixedId('agent', 'agent', agentId);
    await this.agents.getForTenant(tenantId, agentId); // 404 for another tenant's agent
    return (await this.broker.listGrants(tenantId, agentId)).map(toGrantResponse);
  }

  @Delete('grants/:id')
  async revoke(@Tenant() tenantId: string, @Param('id') id: string) {
    assertPrefixedId('grant', 'grant', id);
    return toGrantResponse(await this.broker.revokeGrant(tenantId, id, 'rest'));
  }
}
