import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { AgentToolRunService, ToolRunResult } from './agent-tool-run.service';

/** Letta's `agents.tools.run`: one call of an attached tool, under the agent's rules. */
@Controller('v1/agents')
export class AgentToolRunController {
  constructor(private readonly runs: AgentToolRunService) {}

  @Post(':id/tools/:toolName/run')
  @HttpCode(200)
  run(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('toolName') toolName: string,
    @Body() body: unknown,
  ): Promise<ToolRunResult> {
    return this.runs.run(tenant, id, toolName, body);
  }
}
