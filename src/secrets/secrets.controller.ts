import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { SecretsService, toSecretResponse } from './secrets.service';

type SecretResponse = ReturnType<typeof toSecretResponse>;

/** The tenant's secrets: write-only values, names listed. */
@Controller('v1/secrets')
export class SecretsController {
  constructor(private readonly secrets: SecretsService) {}

  @Get()
  async list(@Tenant() tenant: string): Promise<SecretResponse[]> {
    return (await this.secrets.list(tenant)).map(toSecretResponse);
  }

  @Put(':name')
  @HttpCode(200)
  async put(
    @Tenant() tenant: string,
    @Param('name') name: string,
    @Body() body: unknown,
  ): Promise<SecretResponse> {
    return toSecretResponse(await this.secrets.put(tenant, name, body));
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
