import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError } from '../common/domain-error';
import { assertPrefixedId } from '../common/ids';
import { pageOfList } from '../common/list-page';
import { HistoryService } from './history.service';
import { toLettaMessages, toLettaRun, toLettaStep, toLettaRunUsage } from './message.mapper';
import { parseResumeStream, parseRunsQuery, parseViewQuery } from './query.dto';
import { MessageResponder } from './message-responder';

/** Letta's runs endpoints: `/v1/runs*`. */
@Controller('v1/runs')
export class RunsController {
  constructor(
    private readonly history: HistoryService,
    private readonly responder: MessageResponder,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Record<string, unknown>) {
    return (await this.history.listRuns(tenant, parseRunsQuery(query, this.config.limits))).map(
      toLettaRun,
    );
  }

  @Get(':runId')
  async get(@Tenant() tenant: string, @Param('runId') runId: string) {
    assertPrefixedId('run', 'run', runId);
    return toLettaRun(await this.history.getRun(tenant, runId));
  }

  @Get(':runId/messages')
  async messages(
    @Tenant() tenant: string,
    @Param('runId') runId: string,
    @Query() query: Record<string, unknown>,
  ) {
    assertPrefixedId('run', 'run', runId);
    const view = parseViewQuery(query);
    const messages = toLettaMessages(await this.history.runMessages(tenant, runId), view);
    return pageOfList(messages, query, this.config.limits, 'a message');
  }

  @Get(':runId/usage')
  async usage(@Tenant() tenant: string, @Param('runId') runId: string) {
    assertPrefixedId('run', 'run', runId);
    return toLettaRunUsage((await this.history.getRun(tenant, runId)).usage);
  }

  /**
   * Letta's `runs.trace.retrieve`: OpenTelemetry spans, which Letta reads back from ClickHouse and answers
   * 501 without it. This server exports spans (OTLP) and stores none, so it answers the same 501.
   */
  @Get(':runId/trace')
  async trace(@Tenant() tenant: string, @Param('runId') runId: string): Promise<never> {
    assertPrefixedId('run', 'run', runId);
    await this.history.getRun(tenant, runId);
    throw new DomainError(
      'not_implemented',
      'TRACES_NOT_STORED',
      'run traces are not stored here: spans are exported over OTLP (observability.tracing) to your collector; read them there by the run id',
    );
  }

  @Get(':runId/steps')
  async steps(
    @Tenant() tenant: string,
    @Param('runId') runId: string,
    @Query() query: Record<string, unknown>,
  ) {
    assertPrefixedId('run', 'run', runId);
    const steps = await this.history.runSteps(tenant, runId);
    // newest step first unless asked otherwise, as Letta's list_steps_for_run
    return pageOfList(steps, query, this.config.limits, 'a step', 'desc').map(toLettaStep);
  }

  /**
   * Letta's resumable stream of a run (a `background: true` stream the client lost): the stored messages
   * after `starting_after` (a seq_id of an earlier frame), then live frames until the run ends.
   */
  @Post(':runId/stream')
  @HttpCode(200)
  async stream(
    @Tenant() tenant: string,
    @Param('runId') runId: string,
    @Body() body: unknown,
    @Res() res: Response,
  ): Promise<void> {
    assertPrefixedId('run', 'run', runId);
    await this.responder.resume(
      tenant,
      await this.history.getRun(tenant, runId),
      parseResumeStream(body),
      res,
    );
  }
}
