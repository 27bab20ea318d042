import { Module } from '@nestjs/common';
import { WebhookDispatcher } from './webhook-dispatcher.service';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/** Webhooks: consent and run events delivered to tenants' URLs, signed and retried (docs/webhooks.md). */
@Module({
  controllers: [WebhooksController],
  providers: [WebhooksRepository, WebhooksService, WebhookDispatcher],
})
export class WebhooksModule {}
