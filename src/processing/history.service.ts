import { Inject, Injectable } from '@nestjs/common';
import { notFound } from '../common/domain-error';
import type { MessageEntity } from './entities/message.entity';
import type { RunEntity } from './entities/run.entity';
import type { StepEntity } from './entities/step.entity';
import { ProcessingRepository } from './processing.repository';
import { AGENT_PORT, AgentPort } from './processing.ports';
import type { HistoryQuery, RunsQuery } from './query.dto';

/** Reads of what processing stored: an agent's history, runs, their messages and steps. */
@Injectable()
export class HistoryService {
  constructor(
    private readonly repo: ProcessingRepository,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
  ) {}

  async list(tenantId: string, agentId: string, q: HistoryQuery): Promise<MessageEntity[]> {
    await this.agents.get(tenantId, agentId);
    return this.repo.listMessages(tenantId, agentId, q);
  }

  listRuns(tenantId: string, q: RunsQuery): Promise<RunEntity[]> {
    return this.repo.listRuns(tenantId, q);
  }

  async getRun(tenantId: string, runId: string): Promise<RunEntity> {
    const run = await this.repo.findRun(tenantId, runId);
    if (!run) throw notFound('run', runId);
    return run;
  }

  async runMessages(tenantId: string, runId: string): Promise<MessageEntity[]> {
    await this.getRun(tenantId, runId);
    return this.repo.runMessages(tenantId, runId);
  }

  async runSteps(tenantId: string, runId: string): Promise<StepEntity[]> {
    await this.getRun(tenantId, runId);
    return this.repo.runSteps(tenantId, runId);
  }
}
