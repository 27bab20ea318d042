import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
} from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { fillPage, pageOfList, takenBack } from '../common/list-page';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { toAgentResponse, toBlockResponse } from './agent-response.mapper';
import { AgentsService } from './agents.service';
import { BlocksService } from './blocks.service';

type Json = Record<string, unknown>;

/** Letta's standalone blocks (`client.blocks.*`); attach them with `agents.blocks.attach`. */
@Controller('v1/blocks')
export class BlocksController {
  constructor(
    private readonly blocks: BlocksService,
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(200) // as Letta answers
  async create(@Tenant() tenant: string, @Body() body: unknown): Promise<Json> {
    return toBlockResponse(await this.blocks.create(tenant, body));
  }

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Json): Promise<Json[]> {
    return (await this.blocks.list(tenant, query)).map(toBlockResponse);
  }

  @Get(':id')
  async get(@Tenant() tenant: string, @Param('id') id: string): Promise<Json> {
    return toBlockResponse(await this.blocks.get(tenant, id));
  }

  @Patch(':id')
  async update(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Json> {
    return toBlockResponse(await this.blocks.update(tenant, id, body));
  }

  @Delete(':id')
  @HttpCode(200)
  async delete(@Tenant() tenant: string, @Param('id') id: string): Promise<Json> {
    await this.blocks.remove(tenant, id);
    return { message: `block ${id} deleted` };
  }

  /** The agents the block is attached to (`client.blocks.agents.list`). */
  @Get(':id/agents')
  async agentsOf(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Json,
  ): Promise<Json[]> {
    const ids = (await this.blocks.agentIds(tenant, id)).map((a) => ({ id: a }));
    // newest agent first unless asked otherwise, as Letta's list_agents_for_block
    const page = pageOfList(ids, query, this.config.limits, 'an agent', 'desc');
    // one at a time, until the page's bytes are spent: a block may be shared by thousands of agents
    return fillPage(page, this.config.limits.max_page_bytes, takenBack(query), async (a) =>
      toAgentResponse(await this.agents.get(tenant, a.id)),
    );
  }
}
