import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Tenant } from '../auth/tenant.guard';
import { assertPrefixedId } from '../common/ids';
import { RunEventsBus } from '../common/run-events';
import { HistoryService } from './history.service';
import { toLettaMessage, toLettaRun, toLettaUsage } from './message.mapper';
import { BatchResult, MessagingService } from './messaging.service';
import { parseCancel, parseHistoryQuery } from './query.dto';
import { RunStream } from './run-stream';
import { parseSendMessage, SendMessageRequest } from './send-message.dto';

/** Letta's messaging endpoints: `/v1/agents/{id}/messages*`. */
@Controller('v1/agents/:agentId/messages')
export class MessagesController {
  constructor(
    private readonly messaging: MessagingService,
    private readonly history: HistoryService,
    private readonly bus: RunEventsBus,
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
    const req = parseSendMessage(body, { streamPath: false });
    if (req.streaming) return this.stream(tenant, agentId, req, res);
    const run = await this.messaging.submit(tenant, agentId, req, 'sync');
    res.status(200).json(toBatchResponse(await this.messaging.waitFor(run.id)));
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
    await this.stream(tenant, agentId, parseSendMessage(body, { streamPath: true }), res);
  }

  @Post('async')
  @HttpCode(202)
  async sendAsync(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
  ): Promise<unknown> {
    assertPrefixedId('agent', 'agent', agentId);
    const req = parseSendMessage(body, { streamPath: false });
    return toLettaRun(await this.messaging.submit(tenant, agentId, req, 'async'));
  }

  @Get()
  async list(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Query() query: Record<string, unknown>,
  ): Promise<unknown[]> {
    assertPrefixedId('agent', 'agent', agentId);
    const rows = await this.history.list(tenant, agentId, parseHistoryQuery(query));
    return rows.map(toLettaMessage);
  }

  @Post('cancel')
  @HttpCode(200)
  cancel(
    @Tenant() tenant: string,
    @Param('agentId') agentId: string,
    @Body() body: unknown,
  ): Promise<Record<string, string>> {
    assertPrefixedId('agent', 'agent', agentId);
    return this.messaging.cancel(tenant, agentId, parseCancel(body));
  }

  /** Errors before the run is stored answer as JSON; from then on the stream carries everything. */
  private async stream(
    tenant: string,
    agentId: string,
    req: SendMessageRequest,
    res: Response,
  ): Promise<void> {
    await this.messaging.submit(tenant, agentId, req, 'stream', (run) => {
      new RunStream(res, this.bus, agentId, req.includePings).follow(run.id);
    });
  }
}

export function toBatchResponse({ run, messages }: BatchResult) {
  return {
    messages: messages.map(toLettaMessage),
    stop_reason: { message_type: 'stop_reason', stop_reason: run.stop_reason },
    usage: toLettaUsage(run.usage),
    run_id: run.id,
  };
}
