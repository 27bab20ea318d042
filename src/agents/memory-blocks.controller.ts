import { Body, Controller, Get, Inject, Param, Patch, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { pageOfList } from '../common/list-page';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { toAgentResponse, toBlockResponse } from './agent-response.mapper';
import { AgentsService } from './agents.service';

type Json = Record<string, unknown>;

/** Letta's core-memory block routes (`client.agents.blocks.*`). */
@Controller('v1/agents/:id/core-memory/blocks')
export class MemoryBlocksController {
  constructor(
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  async list(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Json,
  ): Promise<Json[]> {
    // Letta's default order: newest first
    const blocks = await this.agents.blocksOldestFirst(tenant, id);
    return pageOfList(blocks, query, this.config.limits, 'a block', 'desc').map(toBlockResponse);
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
