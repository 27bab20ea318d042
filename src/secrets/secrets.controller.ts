import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { SecretsService, SecretView } from './secrets.service';

/** The tenant's secrets: write-only values, names listed. */
@Controller('v1/secrets')
export class SecretsController {
  constructor(private readonly secrets: SecretsService) {}

  @Get()
  list(@Tenant() tenant: string): Promise<SecretView[]> {
    return this.secrets.list(tenant);
  }

  @Put(':name')
  @HttpCode(200)
  put(
    @Tenant() tenant: string,
    @Param('name') name: string,
    @Body() body: unknown,
  ): Promise<SecretView> {
    return this.secrets.put(tenant, name, body);
  }

  @Delete(':name')
  @HttpCode(200)
  async delete(
    @Tenant() tenant: string,
    @Param('name') name: string,
  ): Promise<{ message: string }> {
    await this.secrets.delete(tenant, name);
    return { message: `secret ${name} deleted` };
  }
}
