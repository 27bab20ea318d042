import { Body, Controller, Get, Header, Inject, Param, Patch, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { assertPrefixedId } from '../common/ids';
import { pageOfList } from '../common/list-page';
import { HistoryService } from './history.service';
import { toLettaMessages, toLettaStep, toLettaStepMetrics } from './message.mapper';
import { parseStepsQuery, parseViewQuery } from './query.dto';
import { parseStepFeedback } from './step-feedback.dto';

/** Letta's steps: `GET /v1/steps/` (the tenant's, or one agent's), `GET /v1/steps/{id}` and its messages. */
@Controller('v1/steps')
export class StepsController {
  constructor(
    private readonly history: HistoryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Record<string, unknown>) {
    return (await this.history.listSteps(tenant, parseStepsQuery(query, this.config.limits))).map(
      toLettaStep,
    );
  }

  @Get(':stepId')
  async get(@Tenant() tenant: string, @Param('stepId') stepId: string) {
    assertPrefixedId('step', 'step', stepId);
    return toLettaStep(await this.history.getStep(tenant, stepId));
  }

  /** Letta's `steps.feedback.create`: positive / negative (absent clears it) and tags; answers the step. */
  @Patch(':stepId/feedback')
  async feedback(@Tenant() tenant: string, @Param('stepId') stepId: string, @Body() body: unknown) {
    assertPrefixedId('step', 'step', stepId);
    const { feedback, tags } = parseStepFeedback(body, this.config.limits);
    return toLettaStep(await this.history.setStepFeedback(tenant, stepId, feedback, tags));
  }

  /** Letta's `steps.metrics.retrieve`: the model call's timing; what is not recorded is null. */
  @Get(':stepId/metrics')
  async metrics(@Tenant() tenant: string, @Param('stepId') stepId: string) {
    assertPrefixedId('step', 'step', stepId);
    return toLettaStepMetrics(await this.history.getStep(tenant, stepId));
  }

  /**
   * Letta's `steps.trace.retrieve`: the provider's raw request and response, which this server does not
   * store; `null`, as Letta's server answers a step without a provider trace.
   */
  @Get(':stepId/trace')
  @Header('content-type', 'application/json; charset=utf-8')
  async trace(@Tenant() tenant: string, @Param('stepId') stepId: string): Promise<string> {
    assertPrefixedId('step', 'step', stepId);
    await this.history.getStep(tenant, stepId);
    return 'null';
  }

  /** Letta's `steps.messages.list`: the messages the step wrote, in the history's view. */
  @Get(':stepId/messages')
  async messages(
    @Tenant() tenant: string,
    @Param('stepId') stepId: string,
    @Query() query: Record<string, unknown>,
  ) {
    assertPrefixedId('step', 'step', stepId);
    const messages = toLettaMessages(
      await this.history.stepMessages(tenant, stepId),
      parseViewQuery(query),
    );
    return pageOfList(messages, query, this.config.limits, 'a message');
  }
}
