import { Body, Controller, Get, Param, Patch } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { toAgentResponse, toBlockResponse } from './agent-response.mapper';
import { AgentsService } from './agents.service';

type Json = Record<string, unknown>;

/** Letta's core-memory block routes (`client.agents.blocks.*`). */
@Controller('v1/agents/:id/core-memory/blocks')
export class MemoryBlocksController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  async list(@Tenant() tenant: string, @Param('id') id: string): Promise<Json[]> {
    return (await this.agents.blocks(tenant, id)).map(toBlockResponse);
  }

  @Patch('attach/:block_id')
  async attach(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('block_id') blockId: string,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.attachBlock(tenant, id, blockId));
  }

  @Patch('detach/:block_id')
  async detach(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('block_id') blockId: string,
  ): Promise<Json> {
    return toAgentResponse(await this.agents.detachBlock(tenant, id, blockId));
  }

  @Get(':label')
  async get(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('label') label: string,
  ): Promise<Json> {
    return toBlockResponse(await this.agents.block(tenant, id, label));
  }

  @Patch(':label')
  async update(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('label') label: string,
    @Body() body: unknown,
  ): Promise<Json> {
    return toBlockResponse(await this.agents.patchBlock(tenant, id, label, body));
  }
}
