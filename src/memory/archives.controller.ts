import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import {
  toArchiveResponse,
  toPassageResponse,
  toPassageSearchResult,
} from './archival-response.mapper';
import { ArchivalService } from './archival.service';

type Json = Record<string, unknown>;

/** Letta's archives (`client.archives.*`, `client.archives.passages.*`). */
@Controller('v1/archives')
export class ArchivesController {
  constructor(private readonly archival: ArchivalService) {}

  @Post()
  @HttpCode(200) // as Letta answers
  async create(@Tenant() tenant: string, @Body() body: unknown): Promise<Json> {
    return toArchiveResponse(await this.archival.createArchive(tenant, body));
  }

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Json): Promise<Json[]> {
    return (await this.archival.listArchives(tenant, query)).map(toArchiveResponse);
  }

  @Get(':id')
  async get(@Tenant() tenant: string, @Param('id') id: string): Promise<Json> {
    return toArchiveResponse(await this.archival.getArchive(tenant, id));
  }

  @Patch(':id')
  async update(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Json> {
    return toArchiveResponse(await this.archival.updateArchive(tenant, id, body));
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(@Tenant() tenant: string, @Param('id') id: string): Promise<void> {
    await this.archival.removeArchive(tenant, id);
  }

  @Post(':id/passages')
  @HttpCode(200)
  async addPassage(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Json> {
    const [p] = await this.archival.addPassages(tenant, id, body, false);
    return toPassageResponse(p);
  }

  @Post(':id/passages/batch')
  @HttpCode(200)
  async addPassages(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Json[]> {
    return (await this.archival.addPassages(tenant, id, body, true)).map(toPassageResponse);
  }

  @Delete(':id/passages/:passage_id')
  @HttpCode(204)
  async deletePassage(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('passage_id') passageId: string,
  ): Promise<void> {
    await this.archival.removeArchivePassage(tenant, id, passageId);
  }
}

/** Letta's `client.passages.search`: ranked full-text search over the tenant's passages. */
@Controller('v1/passages')
export class PassagesController {
  constructor(private readonly archival: ArchivalService) {}

  @Post('search')
  @HttpCode(200)
  async search(@Tenant() tenant: string, @Body() body: unknown): Promise<Json[]> {
    return (await this.archival.search(tenant, body)).map(toPassageSearchResult);
  }
}
