import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { LRUCache } from 'lru-cache';
import { DataSource, In, IsNull, Not } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import type { HistoryMessage } from '../core/loop/context-builder';
import type { RunStatus, StopReason } from '../core/loop/stop-reason';
import { GroupCommit } from '../database/group-commit';
import { MessageEntity } from './entities/message.entity';
import { ParkedCall, RunEntity, RunUsage } from './entities/run.entity';
import { StepEntity } from './entities/step.entity';
import { toLettaMessage } from './message.mapper';

export type NewMessage = Omit<MessageEntity, 'seq_id'>;

/** A message row of a run, before its per-agent seq_id is given. */
export function newMessageRow(
  id: string,
  run: Pick<RunEntity, 'id' | 'tenant_id' | 'agent_id' | 'batch_id'>,
  type: MessageEntity['message_type'],
  payload: Record<string, unknown>,
  stepId: string | null,
  at: number,
): NewMessage {
  return {
    id,
    tenant_id: run.tenant_id,
    agent_id: run.agent_id,
    run_id: run.id,
    step_id: stepId,
    batch_id: run.batch_id,
    message_type: type,
    payload,
    created_at: at,
  };
}

export interface MessagePage {
  limit: number;
  before?: string;
  after?: string;
  order: 'asc' | 'desc';
}

/** How much history one agent keeps in memory for context building (the context window trims further). */
const HISTORY_CAP = 2000;

/**
 * Runs, steps and messages. Every message gets the next per-agent `seq_id`; the counters live in memory
 * (one process owns the database) and start from the stored maximum. Recent history is cached per agent
 * so that a step does not re-read the whole conversation.
 */
@Injectable()
export class ProcessingRepository {
  private readonly seq = new Map<string, number>();
  private readonly seqInit = new Map<string, Promise<number>>();
  private readonly history = new LRUCache<string, HistoryMessage[]>({ max: 2000 });

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly writes: GroupCommit,
  ) {}

  // ------------------------------------------------------------ runs

  insertRun(run: RunEntity): Promise<void> {
    return this.writes.insert({ entity: RunEntity, rows: [run] });
  }

  findRun(tenantId: string, id: string): Promise<RunEntity | null> {
    return this.ds.getRepository(RunEntity).findOneBy({ id, tenant_id: tenantId });
  }

  findRunById(id: string): Promise<RunEntity | null> {
    return this.ds.getRepository(RunEntity).findOneBy({ id });
  }

  /** created → running; false when the run is no longer queued (cancelled meanwhile). */
  async claimRun(id: string, at: number): Promise<boolean> {
    const res = await this.writes.run((em) =>
      em
        .getRepository(RunEntity)
        .update({ id, status: 'created' }, { status: 'running', started_at: at }),
    );
    return (res.affected ?? 0) > 0;
  }

  async finishRun(
    id: string,
    fields: {
      status: RunStatus;
      stop_reason: StopReason;
      usage: RunUsage;
      error?: string | null;
      parked?: ParkedCall[] | null;
    },
    at: number,
  ): Promise<void> {
    const values = {
      status: fields.status,
      stop_reason: fields.stop_reason,
      usage: fields.usage,
      error: fields.error ?? null,
      parked: fields.parked ?? null,
      completed_at: at,
    } as QueryDeepPartialEntity<RunEntity>;
    await this.writes.run((em) => em.getRepository(RunEntity).update({ id }, values));
  }

  /** Cancels a queued run; false when it already started. */
  async cancelQueuedRun(id: string, at: number): Promise<boolean> {
    const res = await this.writes.run((em) =>
      em
        .getRepository(RunEntity)
        .update(
          { id, status: 'created' },
          { status: 'cancelled', stop_reason: 'cancelled', completed_at: at },
        ),
    );
    return (res.affected ?? 0) > 0;
  }

  listRuns(
    tenantId: string,
    q: {
      agentId?: string;
      statuses?: RunStatus[];
      limit: number;
      after?: string;
      before?: string;
      order: 'asc' | 'desc';
    },
  ): Promise<RunEntity[]> {
    const qb = this.ds
      .getRepository(RunEntity)
      .createQueryBuilder('r')
      .where('r.tenant_id = :tenantId', { tenantId });
    if (q.agentId) qb.andWhere('r.agent_id = :agentId', { agentId: q.agentId });
    if (q.statuses?.length) qb.andWhere('r.status IN (:...statuses)', { statuses: q.statuses });
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    if (q.after) {
      const op = q.order === 'asc' ? '>' : '<';
      qb.andWhere(
        `(r.created_at ${op} (SELECT c.created_at FROM runs c WHERE c.id = :after) OR (r.created_at = (SELECT c2.created_at FROM runs c2 WHERE c2.id = :after) AND r.id ${op} :after))`,
        { after: q.after },
      );
    }
    if (q.before) {
      const op = q.order === 'asc' ? '<' : '>';
      qb.andWhere(
        `(r.created_at ${op} (SELECT c.created_at FROM runs c WHERE c.id = :before) OR (r.created_at = (SELECT c2.created_at FROM runs c2 WHERE c2.id = :before) AND r.id ${op} :before))`,
        { before: q.before },
      );
    }
    return qb.orderBy('r.created_at', dir).addOrderBy('r.id', dir).limit(q.limit).getMany();
  }

  /** Runs a crash left behind: `running` ones (interrupted) and `created` ones (still queued), oldest first. */
  runsWithStatus(status: RunStatus): Promise<RunEntity[]> {
    return this.ds
      .getRepository(RunEntity)
      .find({ where: { status }, order: { created_at: 'ASC', batch_id: 'ASC' } });
  }

  /** The agent's run parked for consent, not yet continued. */
  findParkedRun(tenantId: string, agentId: string): Promise<RunEntity | null> {
    return this.ds.getRepository(RunEntity).findOne({
      where: {
        tenant_id: tenantId,
        agent_id: agentId,
        parked: Not(IsNull()),
        continued_by: IsNull(),
      },
      order: { created_at: 'DESC' },
    });
  }

  /** The agent's pending approval as Letta shows it on the agent (`pending_approval`), or null. */
  async pendingApproval(
    tenantId: string,
    agentId: string,
  ): Promise<Record<string, unknown> | null> {
    const run = await this.findParkedRun(tenantId, agentId);
    if (!run?.parked?.length) return null;
    const requests = (await this.runMessages(tenantId, run.id)).filter(
      (m) => m.message_type === 'approval_request_message',
    );
    if (requests.length === 0) return null;
    const first = toLettaMessage(requests[0]);
    return { ...first, tool_calls: requests.map((m) => m.payload.tool_call) };
  }

  /** Every run parked for consent and not yet continued (boot: resume after decisions). */
  allParkedRuns(): Promise<RunEntity[]> {
    return this.ds
      .getRepository(RunEntity)
      .find({ where: { parked: Not(IsNull()), continued_by: IsNull() } });
  }

  /** Inserts the continuation run and claims the parked one in one transaction. */
  async insertContinuation(parkedRunId: string, run: RunEntity): Promise<boolean> {
    return this.writes.run(async (em) => {
      const res = await em
        .getRepository(RunEntity)
        .update({ id: parkedRunId, continued_by: IsNull() }, { continued_by: run.id });
      if ((res.affected ?? 0) === 0) return false;
      await em.getRepository(RunEntity).insert(run as QueryDeepPartialEntity<RunEntity>);
      return true;
    });
  }

  // ------------------------------------------------------------ steps

  /** Model calls and tokens a batch has used so far, over all its runs (its budgets count them all). */
  async batchSpent(batchId: string): Promise<{ steps: number; tokens: number }> {
    const steps = await this.ds
      .getRepository(StepEntity)
      .find({ where: { batch_id: batchId }, select: { usage: true } });
    return {
      steps: steps.length,
      tokens: steps.reduce((n, s) => n + (s.usage?.total_tokens ?? 0), 0),
    };
  }

  runSteps(tenantId: string, runId: string): Promise<StepEntity[]> {
    return this.ds
      .getRepository(StepEntity)
      .find({ where: { tenant_id: tenantId, run_id: runId }, order: { step_number: 'ASC' } });
  }

  // ------------------------------------------------------------ messages

  /** Writes messages (and a step, when given) in one transaction; returns them with their seq_id. */
  async append(
    agentId: string,
    messages: NewMessage[],
    step?: StepEntity,
  ): Promise<MessageEntity[]> {
    if (messages.length === 0 && !step) return [];
    const rows = await this.withSeq(agentId, messages);
    await this.writes.insert(
      { entity: StepEntity, rows: step ? [step] : [] },
      { entity: MessageEntity, rows },
    );
    const cached = this.history.get(agentId);
    if (cached) {
      cached.push(...rows.map(toHistory));
      if (cached.length > HISTORY_CAP) cached.splice(0, cached.length - HISTORY_CAP);
    }
    return rows;
  }

  /** The agent's recent history, oldest first (cached). */
  async loadHistory(agentId: string): Promise<HistoryMessage[]> {
    const cached = this.history.get(agentId);
    if (cached) return cached;
    const rows = await this.ds.getRepository(MessageEntity).find({
      where: { agent_id: agentId },
      order: { seq_id: 'DESC' },
      take: HISTORY_CAP,
    });
    const list = rows.reverse().map(toHistory);
    this.history.set(agentId, list);
    return list;
  }

  forgetAgent(agentId: string): void {
    this.history.delete(agentId);
  }

  async listMessages(
    tenantId: string,
    agentId: string,
    page: MessagePage,
  ): Promise<MessageEntity[]> {
    const qb = this.ds
      .getRepository(MessageEntity)
      .createQueryBuilder('m')
      .where('m.tenant_id = :tenantId AND m.agent_id = :agentId', { tenantId, agentId });
    const cursor = async (id: string) =>
      (await this.ds.getRepository(MessageEntity).findOneBy({ id, agent_id: agentId }))?.seq_id;
    if (page.before) {
      const s = await cursor(page.before);
      if (s !== undefined) qb.andWhere('m.seq_id < :bs', { bs: s });
    }
    if (page.after) {
      const s = await cursor(page.after);
      if (s !== undefined) qb.andWhere('m.seq_id > :as', { as: s });
    }
    return qb
      .orderBy('m.seq_id', page.order === 'asc' ? 'ASC' : 'DESC')
      .limit(page.limit)
      .getMany();
  }

  /** conversation_search: user and assistant messages containing the text, newest first. */
  searchMessages(
    tenantId: string,
    agentId: string,
    query: string,
    limit: number,
  ): Promise<MessageEntity[]> {
    const like = `%${query.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c)}%`;
    return this.ds
      .getRepository(MessageEntity)
      .createQueryBuilder('m')
      .where('m.tenant_id = :tenantId AND m.agent_id = :agentId', { tenantId, agentId })
      .andWhere('m.message_type IN (:...types)', { types: ['user_message', 'assistant_message'] })
      .andWhere("LOWER(m.payload) LIKE :like ESCAPE '\\'", { like })
      .orderBy('m.seq_id', 'DESC')
      .limit(limit)
      .getMany();
  }

  runMessages(tenantId: string, runId: string): Promise<MessageEntity[]> {
    return this.ds
      .getRepository(MessageEntity)
      .find({ where: { tenant_id: tenantId, run_id: runId }, order: { seq_id: 'ASC' } });
  }

  batchMessages(batchId: string, types: string[]): Promise<MessageEntity[]> {
    return this.ds.getRepository(MessageEntity).find({
      where: { batch_id: batchId, message_type: In(types) },
      order: { seq_id: 'ASC' },
    });
  }

  private async withSeq(agentId: string, messages: NewMessage[]): Promise<MessageEntity[]> {
    let next = this.seq.get(agentId);
    if (next === undefined) {
      let init = this.seqInit.get(agentId);
      if (!init) {
        init = this.ds
          .getRepository(MessageEntity)
          .createQueryBuilder('m')
          .select('MAX(m.seq_id)', 'max')
          .where('m.agent_id = :agentId', { agentId })
          .getRawOne<{ max: string | number | null }>()
          .then((r) => Number(r?.max ?? 0));
        this.seqInit.set(agentId, init);
      }
      const max = await init;
      this.seqInit.delete(agentId);
      // another caller may have initialised the counter while this one waited
      next = this.seq.get(agentId) ?? max;
    }
    const base = next;
    const rows = messages.map((m, i) => ({ ...m, seq_id: base + i + 1 }));
    this.seq.set(agentId, base + messages.length);
    return rows;
  }
}

function toHistory(m: MessageEntity): HistoryMessage {
  return { id: m.id, message_type: m.message_type, step_id: m.step_id, payload: m.payload };
}
