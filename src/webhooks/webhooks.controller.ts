import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
} from '@nestjs/common';
import { Public, Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { assertPrefixedId } from '../common/ids';
import { pageBounds } from '../common/page-limit';
import { toGrantResponse, toRequestResponse } from '../permissions/consent.mappers';
import { toDeliveryResponse, toWebhookResponse } from './webhook.mappers';
import { WebhooksService } from './webhooks.service';

/** Per-tenant webhooks, their delivery records, and the one-time decision URLs they carry. */
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  async create(@Tenant() tenantId: string, @Body() body: unknown) {
    const { webhook, secret } = await this.webhooks.create(tenantId, body);
    // the secret is shown this once
    return { ...toWebhookResponse(webhook), secret };
  }

  @Get()
  async list(@Tenant() tenantId: string) {
    return (await this.webhooks.list(tenantId)).map(toWebhookResponse);
  }

  @Get(':id')
  async get(@Tenant() tenantId: string, @Param('id') id: string) {
    assertPrefixedId('webhook', 'webhook', id);
    return toWebhookResponse(await this.webhooks.get(tenantId, id));
  }

  @Delete(':id')
  async remove(@Tenant() tenantId: string, @Param('id') id: string) {
    assertPrefixedId('webhook', 'webhook', id);
    return toWebhookResponse(await this.webhooks.remove(tenantId, id));
  }

  @Get(':id/deliveries')
  async deliveries(
    @Tenant() tenantId: string,
    @Param('id') id: string,
    @Query('limit') limit?: string,
  ) {
    assertPrefixedId('webhook', 'webhook', id);
    const rows = await this.webhooks.deliveries(
      tenantId,
      id,
      pageBounds(limit, 100, this.config.limits),
    );
    return rows.map(toDeliveryResponse);
  }

  /** The decision URL of a consent.request delivery: the token is the credential, so no API key. */
  @Public()
  @Post('decisions/:token')
  @HttpCode(200)
  async decide(@Param('token') token: string, @Body() body: unknown) {
    const { request, grant } = await this.webhooks.decideByToken(token, body);
    return { ...toRequestResponse(request), grant: grant ? toGrantResponse(grant) : null };
  }
}
