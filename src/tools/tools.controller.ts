import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { toToolResponse } from './tool-response.mapper';
import { ToolsService } from './tools.service';

@Controller('v1/tools')
export class ToolsController {
  constructor(private readonly tools: ToolsService) {}

  @Get()
  async list(@Tenant() tenant: string): Promise<Record<string, unknown>[]> {
    return (await this.tools.list(tenant)).map(toToolResponse);
  }

  @Post()
  @HttpCode(200) // as Letta answers
  async create(@Tenant() tenant: string, @Body() body: unknown): Promise<Record<string, unknown>> {
    return toToolResponse(await this.tools.create(tenant, body));
  }

  @Get(':id')
  async get(@Tenant() tenant: string, @Param('id') id: string): Promise<Record<string, unknown>> {
    return toToolResponse(await this.tools.get(tenant, id));
  }

  @Delete(':id')
  @HttpCode(200)
  async delete(@Tenant() tenant: string, @Param('id') id: string): Promise<{ message: string }> {
    await this.tools.delete(tenant, id);
    return { message: `tool ${id} deleted` };
  }
}
