import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { notFound } from '../common/domain-error';
import { toToolResponse } from '../tools/tool-response.mapper';
import type { McpToolSync } from '../tools/tools.service';
import { toMcpServerResponse } from './mcp-server-response.mapper';
import { McpServersService } from './mcp-servers.service';

/** Letta's `/v1/mcp-servers/` (run-a-tool-directly is left out: it would bypass rules and consent). */
@Controller('v1/mcp-servers')
export class McpServersController {
  constructor(private readonly servers: McpServersService) {}

  @Post()
  @HttpCode(200) // as Letta answers
  async create(@Tenant() tenant: string, @Body() body: unknown): Promise<Record<string, unknown>> {
    return toMcpServerResponse(await this.servers.create(tenant, body));
  }

  @Get()
  async list(@Tenant() tenant: string): Promise<Record<string, unknown>[]> {
    return (await this.servers.list(tenant)).map(toMcpServerResponse);
  }

  @Get(':id')
  async get(@Tenant() tenant: string, @Param('id') id: string): Promise<Record<string, unknown>> {
    return toMcpServerResponse(await this.servers.get(tenant, id));
  }

  @Patch(':id')
  async update(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Record<string, unknown>> {
    return toMcpServerResponse(await this.servers.update(tenant, id, body));
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(@Tenant() tenant: string, @Param('id') id: string): Promise<void> {
    await this.servers.delete(tenant, id);
  }

  @Get(':id/tools')
  async tools(
    @Tenant() tenant: string,
    @Param('id') id: string,
  ): Promise<Record<string, unknown>[]> {
    return (await this.servers.listTools(tenant, id)).map(toToolResponse);
  }

  @Get(':id/tools/:toolId')
  async tool(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('toolId') toolId: string,
  ): Promise<Record<string, unknown>> {
    const found = (await this.servers.listTools(tenant, id)).find((t) => t.id === toolId);
    if (!found) throw notFound('tool', toolId);
    return toToolResponse(found);
  }

  @Patch(':id/refresh')
  refresh(@Tenant() tenant: string, @Param('id') id: string): Promise<McpToolSync> {
    return this.servers.refreshForTenant(tenant, id);
  }
}
