import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { assertPrefixedId } from '../common/ids';
import { HistoryService } from './history.service';
import { toLettaMessages, toLettaStep } from './message.mapper';
import { parseRunsQuery, parseViewQuery } from './query.dto';

/** Letta's steps: `GET /v1/steps/` (the tenant's, or one agent's), `GET /v1/steps/{id}` and its messages. */
@Controller('v1/steps')
export class StepsController {
  constructor(
    private readonly history: HistoryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Record<string, unknown>) {
    return (await this.history.listSteps(tenant, parseRunsQuery(query, this.config.limits))).map(
      toLettaStep,
    );
  }

  @Get(':stepId')
  async get(@Tenant() tenant: string, @Param('stepId') stepId: string) {
    assertPrefixedId('step', 'step', stepId);
    return toLettaStep(await this.history.getStep(tenant, stepId));
  }

  /** Letta's `steps.messages.list`: the messages the step wrote, in the history's view. */
  @Get(':stepId/messages')
  async messages(
    @Tenant() tenant: string,
    @Param('stepId') stepId: string,
    @Query() query: Record<string, unknown>,
  ) {
    assertPrefixedId('step', 'step', stepId);
    return toLettaMessages(await this.history.stepMessages(tenant, stepId), parseViewQuery(query));
  }
}
