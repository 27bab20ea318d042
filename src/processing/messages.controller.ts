import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { assertPrefixedId } from '../common/ids';
import { HistoryService } from './history.service';
import { toLettaMessage, toLettaRun } from './message.mapper';
import { MessageResponder } from './message-responder';
import { MessagingService } from './messaging.service';
import { parseCancel, parseHistoryQuery } from './query.dto';

/** Letta's messaging endpoints: `/v1/agents/{id}/messages*`. */
@Controller('v1/agents/:agentId/messages')
export class MessagesController {
  constructor(
    private readonly messaging: MessagingService,
    private readonly history: HistoryService,
    private readonly responder: MessageResponder,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(200)
  async send(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
    @Res() res: Response,
  ): Promise<void> {
    assertPrefixedId('agent', 'agent', agentId);
    // Letta's send_message refuses stream_tokens, include_pings: false, background without streaming
    await this.responder.respond(tenant, agentId, this.responder.parse(body, false, true), res);
  }

  @Post('stream')
  @HttpCode(200)
  async streamRoute(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
    @Res() res: Response,
  ): Promise<void> {
    assertPrefixedId('agent', 'agent', agentId);
    await this.responder.respond(tenant, agentId, this.responder.parse(body, true), res);
  }

  @Post('async')
  @HttpCode(202)
  async sendAsync(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
  ): Promise<unknown> {
    assertPrefixedId('agent', 'agent', agentId);
    const req = this.responder.parse(body, false);
    return toLettaRun(await this.messaging.submit(tenant, agentId, req, 'async'));
  }

  @Get()
  async list(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Query() query: Record<string, unknown>,
  ): Promise<unknown[]> {
    assertPrefixedId('agent', 'agent', agentId);
    const q = parseHistoryQuery(query, this.config.limits);
    return (await this.history.list(tenant, agentId, q, q.view)).map(toLettaMessage);
  }

  @Post('cancel')
  @HttpCode(200)
  cancel(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
  ): Promise<Record<string, string>> {
    assertPrefixedId('agent', 'agent', agentId);
    return this.messaging.cancel(tenant, agentId, parseCancel(body, this.config.limits));
  }
}
