import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Put,
  Query,
} from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { IdentitiesService, IdentityView } from './identities.service';

/** Letta's `/v1/identities`: a tenant's users and organisations, attached to its agents. */
@Controller('v1/identities')
export class IdentitiesController {
  constructor(private readonly identities: IdentitiesService) {}

  @Get()
  list(@Tenant() tenant: string, @Query() query: Record<string, unknown>): Promise<IdentityView[]> {
    return this.identities.list(tenant, query);
  }

  @Get('count')
  count(@Tenant() tenant: string): Promise<number> {
    return this.identities.count(tenant);
  }

  @Get(':id')
  get(@Tenant() tenant: string, @Param('id') id: string): Promise<IdentityView> {
    return this.identities.get(tenant, id);
  }

  @Post()
  @HttpCode(200) // as Letta answers
  create(@Tenant() tenant: string, @Body() body: unknown): Promise<IdentityView> {
    return this.identities.create(tenant, body);
  }

  @Put()
  upsert(@Tenant() tenant: string, @Body() body: unknown): Promise<IdentityView> {
    return this.identities.upsert(tenant, body);
  }

  @Patch(':id')
  update(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<IdentityView> {
    return this.identities.update(tenant, id, body);
  }

  @Put(':id/properties')
  properties(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<IdentityView> {
    return this.identities.putProperties(tenant, id, body);
  }

  @Delete(':id')
  @HttpCode(200)
  async delete(@Tenant() tenant: string, @Param('id') id: string): Promise<{ message: string }> {
    await this.identities.delete(tenant, id);
    return { message: `identity ${id} deleted` };
  }
}
