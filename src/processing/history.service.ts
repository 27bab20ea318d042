import { Inject, Injectable } from '@nestjs/common';
import { notFound } from '../common/domain-error';
import { PageBytes, type PageBounds } from '../common/list-page';
import type { MessageEntity } from './entities/message.entity';
import type { RunEntity } from './entities/run.entity';
import type { StepEntity, StepFeedback } from './entities/step.entity';
import { MessageSearchScope, ProcessingRepository } from './processing.repository';
import { AGENT_PORT, AgentPort } from './processing.ports';
import type { HistoryQuery, RunsQuery, StepsQuery } from './query.dto';
import { LettaView, sendMessageForm, shownIn } from './message.mapper';

/** Reads of what processing stored: an agent's history, runs, their messages and steps. */
@Injectable()
export class HistoryService {
  constructor(
    private readonly repo: ProcessingRepository,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
  ) {}

  /**
   * A page of history as the view shows it: pages are filled up past hidden messages (send_message's
   * call and return, types left out), so a client paging until an empty page sees every message once.
   * Every message read counts against the page's bytes (`q.maxBytes`): past them the page ends early.
   */
  async list(
    tenantId: string,
    agentId: string,
    q: HistoryQuery,
    view: LettaView,
  ): Promise<MessageEntity[]> {
    await this.agents.get(tenantId, agentId);
    const out: MessageEntity[] = [];
    const budget = new PageBytes(q.maxBytes);
    let cursor = q.after;
    for (;;) {
      const page = { ...q, after: cursor, maxBytes: budget.left };
      const rows = await this.repo.listMessages(tenantId, agentId, page);
      for (const m of rows) {
        budget.take(m); // weighed only: the read kept to the bytes left
        if (shownIn(view, m.message_type, sendMessageForm(m))) out.push(m);
        if (out.length === q.limit) return out;
      }
      // fewer rows: the history's end, or the page's bytes
      if (rows.length < q.limit || budget.spent) return out;
      cursor = rows[rows.length - 1].id;
    }
  }

  /** The tenant's messages across its agents, as the view shows them. */
  async tenantMessages(
    tenantId: string,
    q: HistoryQuery,
    view: LettaView,
  ): Promise<MessageEntity[]> {
    const rows = await this.repo.tenantMessages(tenantId, q);
    return rows.filter((m) => shownIn(view, m.message_type, sendMessageForm(m)));
  }

  async getMessage(tenantId: string, id: string): Promise<MessageEntity> {
    const m = await this.repo.findMessage(tenantId, id);
    // a call held back until its outcome was known is never shown (its approval request or call is)
    if (!m || m.payload._held) throw notFound('message', id);
    return m;
  }

  search(
    tenantId: string,
    query: string,
    page: PageBounds,
    agentId?: string,
    within?: MessageSearchScope,
  ): Promise<MessageEntity[]> {
    return this.repo.searchMessages(tenantId, agentId ?? null, query, page, within);
  }

  listSteps(tenantId: string, q: StepsQuery): Promise<StepEntity[]> {
    return this.repo.listSteps(tenantId, q);
  }

  async setStepFeedback(
    tenantId: string,
    id: string,
    feedback: StepFeedback | null,
    tags: string[] | null,
  ): Promise<StepEntity> {
    await this.getStep(tenantId, id);
    const step = await this.repo.setStepFeedback(tenantId, id, feedback, tags);
    if (!step) throw notFound('step', id);
    return step;
  }

  async getStep(tenantId: string, id: string): Promise<StepEntity> {
    const step = await this.repo.findStep(tenantId, id);
    if (!step) throw notFound('step', id);
    return step;
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

  /** A page of a run already looked up: its first `limit` messages after seq_id `afterSeq`. */
  runMessagesAfter(tenantId: string, runId: string, afterSeq: number, limit: number) {
    return this.repo.runMessagesAfter(tenantId, runId, afterSeq, limit);
  }

  /** The messages a step wrote (its assistant turn and its tool returns), oldest first. */
  async stepMessages(tenantId: string, stepId: string): Promise<MessageEntity[]> {
    const step = await this.getStep(tenantId, stepId);
    return (await this.repo.runMessages(tenantId, step.run_id)).filter((m) => m.step_id === stepId);
  }

  async runSteps(tenantId: string, runId: string): Promise<StepEntity[]> {
    await this.getRun(tenantId, runId);
    return this.repo.runSteps(tenantId, runId);
  }
}
