import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { toArchivalResult, toPassageResponse } from './archival-response.mapper';
import { ArchivalService } from './archival.service';

type Json = Record<string, unknown>;

/** Letta's agent routes of archival memory (`client.agents.passages.*`, `client.agents.archives.*`). */
@Controller('v1/agents/:id')
export class ArchivalMemoryController {
  constructor(private readonly archival: ArchivalService) {}

  @Post('archival-memory')
  @HttpCode(200) // as Letta answers
  async insert(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Json[]> {
    return (await this.archival.insert(tenant, id, body)).map(toPassageResponse);
  }

  @Get('archival-memory')
  async list(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Json,
  ): Promise<Json[]> {
    return (await this.archival.list(tenant, id, query)).map(toPassageResponse);
  }

  @Get('archival-memory/search')
  async search(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Json,
  ): Promise<Json> {
    const results = (await this.archival.searchAgent(tenant, id, query)).map(toArchivalResult);
    return { results, count: results.length };
  }

  @Delete('archival-memory/:memory_id')
  @HttpCode(200)
  async remove(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('memory_id') memoryId: string,
  ): Promise<Json> {
    await this.archival.remove(tenant, id, memoryId);
    return { message: `Memory id=${memoryId} successfully deleted` };
  }

  @Patch('archives/attach/:archive_id')
  async attach(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('archive_id') archiveId: string,
  ): Promise<Json> {
    await this.archival.attach(tenant, id, archiveId);
    return { message: `archive ${archiveId} attached` };
  }

  @Patch('archives/detach/:archive_id')
  async detach(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('archive_id') archiveId: string,
  ): Promise<Json> {
    await this.archival.detach(tenant, id, archiveId);
    return { message: `archive ${archiveId} detached` };
  }
}
