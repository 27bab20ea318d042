import { Controller, Get, Param, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { assertPrefixedId } from '../common/ids';
import { HistoryService } from './history.service';
import { toLettaMessage, toLettaRun, toLettaStep } from './message.mapper';
import { parseRunsQuery } from './query.dto';

/** Letta's runs endpoints: `/v1/runs*`. */
@Controller('v1/runs')
export class RunsController {
  constructor(private readonly history: HistoryService) {}

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Record<string, unknown>) {
    return (await this.history.listRuns(tenant, parseRunsQuery(query))).map(toLettaRun);
  }

  @Get(':runId')
  async get(@Tenant() tenant: string, @Param('runId') runId: string) {
    assertPrefixedId('run', 'run', runId);
    return toLettaRun(await this.history.getRun(tenant, runId));
  }

  @Get(':runId/messages')
  async messages(@Tenant() tenant: string, @Param('runId') runId: string) {
    assertPrefixedId('run', 'run', runId);
    return (await this.history.runMessages(tenant, runId)).map(toLettaMessage);
  }

  @Get(':runId/steps')
  async steps(@Tenant() tenant: string, @Param('runId') runId: string) {
    assertPrefixedId('run', 'run', runId);
    return (await this.history.runSteps(tenant, runId)).map(toLettaStep);
  }
}
