import { Inject, Injectable } from '@nestjs/common';
import { badRequest } from '../common/domain-error';
import type { PageBounds } from '../common/list-page';
import { containsSql, type SearchScan } from '../database/like-pattern';
import { InjectDataSource } from '@nestjs/typeorm';
import { LRUCache } from 'lru-cache';
import {
  DataSource,
  EntityManager,
  In,
  IsNull,
  MoreThan,
  Not,
  ObjectLiteral,
  SelectQueryBuilder,
} from 'typeorm';
import { AGENT_LEASES, type AgentLeases } from '../cluster/agent-leases';
import { type HistoryMessage, requestedCalls } from '../core/loop/context-builder';
import { summaryHistoryMessage } from '../core/loop/compaction';
import { isHeartbeatContent } from '../core/loop/heartbeat-message';
import { ContextWindow } from '../core/loop/context-window';
import type { MessageCreate } from '../core/loop/message-create';
import type { SharedRange } from '../core/loop/fork-ranges';
import type { RunStatus, StopReason } from '../core/loop/stop-reason';
import { storedBytes } from '../core/limits/stored-bytes';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { GroupCommit } from '../database/group-commit';
import { readWithin } from '../database/keyset-page';
import { ScanSlots } from '../database/scan-slots';
import { RowReader } from '../database/raw-reads';
import { sqlTable } from '../database/sql-names';
import { insertRows, updateWhere } from '../database/raw-writes';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { MessageContextEntity } from './entities/message-context.entity';
import { MessageEntity } from './entities/message.entity';
import { ParkedCall, RunEntity, RunUsage } from './entities/run.entity';
import { StepEntity, type StepFeedback } from './entities/step.entity';
import { toLettaMessage } from './message.mapper';
import type { RunsQuery, StepsQuery } from './query.dto';
import { RunCallbacksRepository } from './run-callbacks.repository';

export type NewMessage = Omit<MessageEntity, 'seq_id'>;
export type MessageContext = Pick<
  MessageContextEntity,
  'start_seq' | 'summary' | 'version' | 'inherited'
>;

/** A message row of a run, before its per-agent seq_id is given. */
export function newMessageRow(
  id: string,
  run: Pick<RunEntity, 'id' | 'tenant_id' | 'agent_id' | 'batch_id' | 'conversation_id'>,
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
    conversation_id: run.conversation_id,
    message_type: type,
    payload,
    created_at: at,
  };
}

/** The stored type of a request's message by its role (an assistant one joins the context as the agent's). */
const INPUT_MESSAGE_TYPE: Record<string, MessageEntity['message_type']> = {
  user: 'user_message',
  system: 'system_message',
  assistant: 'assistant_message',
};

/** A run's input (what the client sent), marked `_input`: stored once, before the run's first step. */
export function inputMessageRows(run: RunEntity, newId: () => string, at: number): NewMessage[] {
  return run.input.messages.map((m) =>
    newMessageRow(
      newId(),
      run,
      INPUT_MESSAGE_TYPE[m.role] ?? 'user_message',
      { content: m.content, ...(m.otid !== undefined ? { otid: m.otid } : {}), _input: true },
      null,
      at,
    ),
  );
}

/**
 * A new agent's `initial_message_sequence` (Letta's starting history) as rows of its default
 * conversation, outside any run, stored as a request's messages are (by role).
 */
export function initialMessageRows(
  tenantId: string,
  agentId: string,
  messages: MessageCreate[],
  newId: () => string,
  at: number,
): NewMessage[] {
  return messages.map((m) => ({
    id: newId(),
    tenant_id: tenantId,
    agent_id: agentId,
    run_id: null,
    step_id: null,
    batch_id: null,
    conversation_id: null,
    message_type: INPUT_MESSAGE_TYPE[m.role] ?? 'user_message',
    payload: { content: m.content, ...(m.otid !== undefined ? { otid: m.otid } : {}) },
    created_at: at,
  }));
}

export interface MessagePage extends PageBounds {
  /** A conversation's messages; absent or null: the agent's default conversation. */
  conversationId?: string | null;
  before?: string;
  after?: string;
  order: 'asc' | 'desc';
  /** `before` means older in either order (HistoryQuery's). */
  beforeIsOlder?: boolean;
}

// spelled as idx_runs_parked's condition, so that SQLite uses that index
const parkedRun = new RowReader(
  RunEntity,
  'tenant_id = ? AND agent_id = ? AND parked IS NOT NULL AND continued_by IS NULL ORDER BY created_at DESC LIMIT 1',
);
const runById = new RowReader(RunEntity, 'id = ?');
const messageContextOf = new RowReader(
  MessageContextEntity,
  'agent_id = ? AND conversation_key = ?',
);

/**
 * A batch parked here for consent, as the run that parked left it: what its continuation would otherwise
 * read back (the parked run, the batch's spent budget, the conversation's context start, none of which
 * can change while the batch is parked) and which of its calls still wait for a decision.
 */
export interface ParkedBatch {
  run: RunEntity;
  spent: { steps: number; tokens: number };
  messageContext: MessageContext | null;
  /**
   * The consent requests of the parked calls no decision has been heard of in this process (by request
   * id: a tool_call_id a provider reused may name an older call too).
   */
  undecided: Set<string>;
}

/** Where Letta's message search looks besides the tenant and agent: a conversation, a time range. */
export interface MessageSearchScope {
  conversationId?: string;
  /** Created after (`start_date`) / on or before (`end_date`), epoch ms. */
  afterMs?: number;
  upToMs?: number;
}

/** Rows of a bounded scan one statement reads (with limits.search_scan_chars of 2000: ~1 MB, a few ms). */
const SCAN_CHUNK = 500;

/** How much history is read to build an agent's context window (the window's token budget trims further). */
const HISTORY_CAP = 2000;

/** How a run ended, as its row keeps it. */
export interface RunEnd {
  status: RunStatus;
  stop_reason: StopReason;
  usage: RunUsage;
  error: string | null;
  error_type: string | null;
  parked: ParkedCall[] | null;
  /** Letta's time to first token: from the run's start to its first model answer's first chunk. */
  ttft_ns?: number | null;
}

/**
 * Runs, steps and messages. Every message gets the next per-agent `seq_id`; the counters live in memory
 * and start from the stored maximum. Each agent's context window (src/core/loop/context-window.ts) is
 * kept in memory and appended to as messages are stored, so a step neither re-reads nor rescans the
 * conversation. Both are valid only while this instance owns the agent: `forget` drops them (called when
 * ownership is (re)acquired).
 */
@Injectable()
export class ProcessingRepository {
  private readonly seq = new Map<string, number>();
  private readonly seqInit = new Map<string, Promise<number>>();
  /**
   * The server's largest in-memory state at many agents: bounded by `processing.context_cache_windows`
   * and by the tokens the windows hold, `processing.context_cache_tokens` (a tenant sets its agents'
   * context windows, up to millions of tokens each); a window larger than that is not kept.
   */
  private readonly windows: LRUCache<string, { window: ContextWindow; version: number }>;
  private readonly searchScan: SearchScan;
  /** One per agent at most (one batch at a time); bounded like the windows. */
  private readonly parkedBatches: LRUCache<string, ParkedBatch>;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly writes: GroupCommit,
    @Inject(AGENT_LEASES) private readonly leases: AgentLeases,
    private readonly callbacks: RunCallbacksRepository,
    private readonly quotas: TenantQuotas,
    private readonly scans: ScanSlots,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.searchScan = {
      rows: config.limits.search_scan_rows,
      chars: config.limits.search_scan_chars,
    };
    this.windows = new LRUCache({
      max: config.processing.context_cache_windows,
      maxSize: config.processing.context_cache_tokens,
      sizeCalculation: (kept) => Math.max(1, kept.window.heldTokens),
    });
    this.parkedBatches = new LRUCache({ max: config.processing.context_cache_windows });
  }

  // ------------------------------------------------------------ runs

  /**
   * Stores a run. A new message's (`checked`) must fit the tenant's `quotas.stored_bytes`, with room for
   * its messages' copy in the history (written when the run starts): checked in the storing transaction,
   * 409 QUOTA_EXCEEDED and nothing stored past it.
   */
  insertRun(run: RunEntity, checked = false): Promise<void> {
    const set = { entity: RunEntity, rows: [run] };
    if (!checked) return this.writes.insert(set);
    const history = inputMessageRows(run, () => '', 0).reduce(
      (n, m) => n + storedBytes('messages', m),
      0,
    );
    return this.writes.insertChecked(
      (em) => this.quotas.assertBytesWithin(em, run.tenant_id, storedBytes('runs', run), history),
      set,
    );
  }

  findRun(tenantId: string, id: string): Promise<RunEntity | null> {
    return this.ds.getRepository(RunEntity).findOneBy({ id, tenant_id: tenantId });
  }

  /** Which of these ids name runs of the agent (ids only). */
  async runIdsOfAgent(tenantId: string, agentId: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.ds.getRepository(RunEntity).find({
      select: { id: true },
      where: { id: In(ids), tenant_id: tenantId, agent_id: agentId },
    });
    return new Set(rows.map((r) => r.id));
  }

  findRunById(id: string): Promise<RunEntity | null> {
    return runById.one(this.ds, [id]);
  }

  /** The agent's run stored for a request with this key (see `requestKey`), if any. */
  findRunByRequestKey(tenantId: string, agentId: string, key: string): Promise<RunEntity | null> {
    return this.ds
      .getRepository(RunEntity)
      .findOneBy({ tenant_id: tenantId, agent_id: agentId, request_key: key });
  }

  /**
   * created → running; false when the run is no longer queued (cancelled meanwhile). Throws LEASE_LOST
   * when this instance no longer holds the agent in `tenure`: only the holder starts its runs.
   */
  async claimRun(
    run: Pick<RunEntity, 'id' | 'agent_id'>,
    at: number,
    tenure: string | null,
  ): Promise<boolean> {
    const res = await this.writes.run(async (em) => {
      await this.leases.guard(em, run.agent_id, tenure);
      return updateWhere(
        em,
        RunEntity,
        { id: run.id, status: 'created' },
        { status: 'running', started_at: at },
      );
    });
    return res > 0;
  }

  /**
   * A run's end. Checked as a run's messages are (see `append`): an instance whose tenure of the agent is
   * over ends none of its runs (LEASE_LOST), as the new holder's recovery does.
   */
  async finishRun(
    run: Pick<RunEntity, 'id' | 'tenant_id' | 'agent_id' | 'input'>,
    fields: RunEnd,
    at: number,
    tenure = this.leases.tenure(run.agent_id),
  ): Promise<void> {
    const values = { ...fields, completed_at: at };
    // a run that another instance has meanwhile ended (it took the agent over) stays as it ended it
    await this.writes.run(async (em) => {
      if (this.leases.shared) await this.leases.guard(em, run.agent_id, tenure);
      if (await updateWhere(em, RunEntity, { id: run.id, status: 'running' }, values))
        await this.callbacks.storeWithEnd(em, { ...run, ...values });
    });
  }

  /** Cancels a queued run (its callback stored with it); false when it already started. */
  async cancelQueuedRun(
    run: Pick<RunEntity, 'id' | 'tenant_id' | 'agent_id' | 'input'>,
    at: number,
  ): Promise<boolean> {
    const end = {
      status: 'cancelled' as const,
      stop_reason: 'cancelled' as const,
      completed_at: at,
    };
    return this.writes.run(async (em) => {
      if (!(await updateWhere(em, RunEntity, { id: run.id, status: 'created' }, end))) return false;
      await this.callbacks.storeWithEnd(em, { ...run, ...end, error: null });
      return true;
    });
  }

  /** Marks runs still running as cancelled by a user (`RunInput.cancel_requested`), for recovery. */
  async requestCancel(runs: RunEntity[]): Promise<void> {
    await this.writes.run(async (em) => {
      for (const r of runs)
        await updateWhere(
          em,
          RunEntity,
          { id: r.id, status: 'running' },
          { input: { ...r.input, cancel_requested: true } },
        );
    });
  }

  listRuns(tenantId: string, q: RunsQuery): Promise<RunEntity[]> {
    const qb = this.ds
      .getRepository(RunEntity)
      .createQueryBuilder('r')
      .where('r.tenant_id = :tenantId', { tenantId });
    if (q.agentIds) qb.andWhere('r.agent_id IN (:...agentIds)', { agentIds: q.agentIds });
    if (q.statuses?.length) qb.andWhere('r.status IN (:...statuses)', { statuses: q.statuses });
    if (q.stopReason) qb.andWhere('r.stop_reason = :stopReason', { stopReason: q.stopReason });
    if (q.inConversation === null) qb.andWhere('r.conversation_id IS NULL');
    else if (q.inConversation !== undefined)
      qb.andWhere('r.conversation_id = :conversationId', { conversationId: q.inConversation });
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    // the cursor run's created_at through the query builder, so the table keeps its schema (PostgreSQL);
    // only the tenant's own runs: another tenant's run id pages as an id that exists nowhere does
    const createdAtOf = (param: string) =>
      qb
        .subQuery()
        .select('c.created_at')
        .from(RunEntity, 'c')
        .where(`c.id = :${param} AND c.tenant_id = :tenantId`)
        .getQuery();
    const cursor = (param: 'after' | 'before', op: '<' | '>') =>
      qb.andWhere(
        `(r.created_at ${op} ${createdAtOf(param)} OR (r.created_at = ${createdAtOf(param)} AND r.id ${op} :${param}))`,
        { [param]: q[param] },
      );
    if (q.after) cursor('after', q.order === 'asc' ? '>' : '<');
    if (q.before) cursor('before', q.order === 'asc' ? '<' : '>');
    return readWithin(qb.orderBy('r.created_at', dir).addOrderBy('r.id', dir), 'r', q);
  }

  /** An agent's `running` runs (interrupted when its lease is taken) or `created` ones (queued), oldest first. */
  runsOfAgent(agentId: string, status: 'created' | 'running'): Promise<RunEntity[]> {
    return (
      this.ds
        .getRepository(RunEntity)
        // batch ids are snowflakes: within one millisecond they keep one instance's arrival order
        .find({
          where: { agent_id: agentId, status },
          order: { created_at: 'ASC', batch_id: 'ASC', id: 'ASC' },
        })
    );
  }

  /** How many of the agent's runs are queued (stored, not started), wherever they will run. */
  countQueuedRuns(agentId: string): Promise<number> {
    return this.ds.getRepository(RunEntity).countBy({ agent_id: agentId, status: 'created' });
  }

  /** Batches of the agent that may still continue (queued, running or parked runs). */
  async openBatchIds(agentId: string): Promise<string[]> {
    const rows = await this.ds
      .getRepository(RunEntity)
      .createQueryBuilder('r')
      .select('DISTINCT r.batch_id', 'batch_id')
      .where('r.agent_id = :agentId', { agentId })
      .andWhere(
        "(r.status IN ('created', 'running') OR (r.parked IS NOT NULL AND r.continued_by IS NULL))",
      )
      .getRawMany<{ batch_id: string }>();
    return rows.map((r) => r.batch_id);
  }

  /** The runs among these that have ended. */
  async finishedRunIds(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.ds.getRepository(RunEntity).find({
      where: { id: In(ids), status: In(['completed', 'failed', 'cancelled']) },
      select: { id: true },
    });
    return rows.map((r) => r.id);
  }

  /** The agent's run parked for consent, not yet continued. */
  findParkedRun(tenantId: string, agentId: string): Promise<RunEntity | null> {
    return parkedRun.one(this.ds, [tenantId, agentId]);
  }

  /** Keeps a batch that just parked here, for the in-memory resumption (a miss reads the database). */
  rememberParked(batch: ParkedBatch): void {
    this.parkedBatches.set(batch.run.agent_id, batch);
  }

  /** The batch the agent has parked here, if this process parked it (and still owns the agent). */
  parkedHere(agentId: string): ParkedBatch | undefined {
    return this.parkedBatches.get(agentId);
  }

  /** The parked batch a continuation of `runId` resumes, taken: it is continued once. */
  takeParked(agentId: string, runId: string): ParkedBatch | undefined {
    const b = this.parkedBatches.get(agentId);
    if (b?.run.id !== runId) return undefined;
    this.parkedBatches.delete(agentId);
    return b;
  }

  /** The newest run of one conversation of an agent (null: its default one). */
  latestRun(
    tenantId: string,
    agentId: string,
    conversationId: string | null,
  ): Promise<RunEntity | null> {
    return this.ds.getRepository(RunEntity).findOne({
      where: {
        tenant_id: tenantId,
        agent_id: agentId,
        conversation_id: conversationId ?? IsNull(),
      },
      order: { created_at: 'DESC' },
    });
  }

  /** A conversation's runs that are queued, running or parked (what cancelling it stops). */
  async openRunIds(
    tenantId: string,
    conversationId: string | null,
    agentId: string,
  ): Promise<string[]> {
    const runs = await this.ds.getRepository(RunEntity).find({
      select: { id: true, status: true, parked: true, continued_by: true },
      where: {
        tenant_id: tenantId,
        agent_id: agentId,
        conversation_id: conversationId ?? IsNull(),
        status: In(['created', 'running', 'completed']),
      },
      order: { created_at: 'DESC' },
      take: 100,
    });
    return runs
      .filter((r) => r.status !== 'completed' || (r.parked && !r.continued_by))
      .map((r) => r.id);
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
    // one request lists the turn's parked calls; a batch parked again adds another
    return {
      ...first,
      tool_calls: requests.flatMap((m) => requestedCalls(m.payload)),
    };
  }

  /** Every run parked for consent and not yet continued (boot: resume after decisions). */
  allParkedRuns(): Promise<RunEntity[]> {
    return this.ds
      .getRepository(RunEntity)
      .find({ where: { parked: Not(IsNull()), continued_by: IsNull() } });
  }

  /** Inserts the continuation run and claims the parked one in one transaction (or in the given one). */
  async insertContinuation(
    parkedRunId: string,
    run: RunEntity,
    em?: EntityManager,
  ): Promise<boolean> {
    if (!em) return this.writes.run((tx) => this.insertContinuation(parkedRunId, run, tx));
    const claimed = await updateWhere(
      em,
      RunEntity,
      { id: parkedRunId, continued_by: null },
      { continued_by: run.id },
    );
    if (claimed === 0) return false;
    await insertRows(em, RunEntity, [run]);
    return true;
  }

  /** The agent's newest run that parked and was continued: the batch a decision may still be settling. */
  lastContinuedRun(tenantId: string, agentId: string): Promise<RunEntity | null> {
    return this.ds.getRepository(RunEntity).findOne({
      where: {
        tenant_id: tenantId,
        agent_id: agentId,
        parked: Not(IsNull()),
        continued_by: Not(IsNull()),
      },
      order: { created_at: 'DESC' },
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

  /**
   * A run's messages (and its step, when given) in one transaction; returns them with their seq_id. With
   * shared leases the transaction checks this instance still holds the agent in `tenure` (a run's: the
   * one it started under; else the current one, as this call reads it) and throws LEASE_LOST otherwise:
   * an instance that stalled past its lease writes nothing beside the new holder's rows, nor does a run
   * of a tenure it lost after it took the agent back.
   */
  append(
    agentId: string,
    messages: NewMessage[],
    step?: StepEntity,
    tenure = this.leases.tenure(agentId),
  ): Promise<MessageEntity[]> {
    return this.insertMessages(agentId, messages, step, this.leases.shared ? tenure : undefined);
  }

  /**
   * A new agent's history from an agent file (or its `initial_message_sequence`): no run writes it yet,
   * and no instance holds it. It must fit the tenant's `quotas.stored_bytes` (409 QUOTA_EXCEEDED).
   */
  appendImported(agentId: string, messages: NewMessage[]): Promise<MessageEntity[]> {
    return this.insertMessages(agentId, messages, undefined, undefined, true);
  }

  /** `fence`: the tenure the write is checked against; undefined: not checked. */
  private async insertMessages(
    agentId: string,
    messages: NewMessage[],
    step: StepEntity | undefined,
    fence: string | null | undefined,
    withinBytes = false,
  ): Promise<MessageEntity[]> {
    if (messages.length === 0 && !step) return [];
    const rows = await this.withSeq(agentId, messages);
    const sets = [
      { entity: StepEntity, rows: step ? [step] : [] },
      { entity: MessageEntity, rows },
    ];
    if (withinBytes) {
      const bytes = rows.reduce((n, m) => n + storedBytes('messages', m), 0);
      await this.writes.insertChecked(
        (em) => this.quotas.assertBytesWithin(em, rows[0].tenant_id, bytes),
        ...sets,
      );
    } else if (fence !== undefined)
      // the lease before the rows: once it is lost, the new holder may have used the seq_ids cached here
      await this.writes.insertFenced((em) => this.leases.guard(em, agentId, fence), ...sets);
    else await this.writes.insert(...sets);
    for (const m of rows) {
      const key = historyKey(agentId, m.conversation_id);
      const kept = this.windows.get(key);
      if (!kept) continue;
      kept.window.append([toHistory(m)]);
      // measured again: a window grows with its conversation
      this.windows.set(key, kept);
    }
    return rows;
  }

  /**
   * The context window of one conversation of the agent (null: its default one), kept for windows up
   * to `keepTokens` (read from the history on a miss, or when the conversation's message context
   * changed: a reset or a compaction, possibly served by another instance).
   */
  async contextWindow(
    agentId: string,
    conversationId: string | null,
    context: MessageContext | null,
    keepTokens: number,
    countTokens: (text: string) => number,
  ): Promise<ContextWindow> {
    const key = historyKey(agentId, conversationId);
    const version = context?.version ?? 0;
    const kept = this.windows.get(key);
    if (kept && kept.window.keepTokens >= keepTokens && kept.version === version)
      return kept.window;
    const window = new ContextWindow(countTokens, keepTokens);
    if (context?.summary)
      window.append([summaryHistoryMessage(`summary-${version}`, context.summary)]);
    const rows = await this.inContextMessages(agentId, conversationId, context);
    window.append(rows.map(toHistory));
    this.windows.set(key, { window, version });
    return window;
  }

  /**
   * The conversation's messages from the context's `start_seq` on (with those a fork shares), oldest
   * first (at most the newest `limit`, and with `maxBytes` the newest that fit it: readWithin).
   */
  async inContextMessages(
    agentId: string,
    conversationId: string | null,
    context: Pick<MessageContext, 'start_seq' | 'inherited'> | null,
    limit = HISTORY_CAP,
    maxBytes?: number,
  ): Promise<MessageEntity[]> {
    const qb = this.inContext(agentId, conversationId, context);
    const rows =
      maxBytes === undefined
        ? await qb.limit(limit).getMany()
        : await readWithin(qb, 'm', { limit, maxBytes });
    return rows.reverse();
  }

  /** Whether the conversation's context holds a message older than seq_id `seq`. */
  async inContextBefore(
    agentId: string,
    conversationId: string | null,
    context: Pick<MessageContext, 'start_seq' | 'inherited'> | null,
    seq: number,
  ): Promise<boolean> {
    const older = await this.inContext(agentId, conversationId, context)
      .select('m.id', 'id')
      .andWhere('m.seq_id < :seq', { seq })
      .limit(1)
      .getRawOne<{ id: string }>();
    return older !== undefined;
  }

  /**
   * The ids of the in-context messages, oldest first, without a call held back until its outcome was
   * known (never shown): read without the payloads (Letta's `message_ids` on every retrieve).
   */
  async inContextMessageIds(
    agentId: string,
    conversationId: string | null,
    context: Pick<MessageContext, 'start_seq' | 'inherited'> | null,
  ): Promise<string[]> {
    const rows = await this.inContext(agentId, conversationId, context)
      .select('m.id', 'id')
      // a held row's JSON holds the key as written; a text that mentions it is escaped (\"_held\")
      .andWhere(`m.payload NOT LIKE '%"_held":true%'`)
      .limit(HISTORY_CAP)
      .getRawMany<{ id: string }>();
    return rows.map((r) => r.id).reverse();
  }

  /** The agent's messages in a conversation's context, newest first. */
  private inContext(
    agentId: string,
    conversationId: string | null,
    context: Pick<MessageContext, 'start_seq' | 'inherited'> | null,
  ): SelectQueryBuilder<MessageEntity> {
    const qb = this.ds
      .getRepository(MessageEntity)
      .createQueryBuilder('m')
      .where('m.agent_id = :agentId', { agentId });
    inConversation(qb, conversationId, context?.inherited ?? null);
    const fromSeq = context?.start_seq ?? 0;
    if (fromSeq > 0) qb.andWhere('m.seq_id >= :fromSeq', { fromSeq });
    return qb.orderBy('m.seq_id', 'DESC');
  }

  /**
   * Whether each of these tool calls has a tool return among the conversation's newest messages (Letta
   * looks at the last 10 in context): an approval sent again after it was processed.
   */
  async hasRecentToolReturns(
    agentId: string,
    conversationId: string | null,
    toolCallIds: string[],
    recent = 10,
  ): Promise<boolean> {
    const qb = this.ds
      .getRepository(MessageEntity)
      .createQueryBuilder('m')
      .where('m.agent_id = :agentId', { agentId });
    inConversation(qb, conversationId, null);
    const rows = await qb.orderBy('m.seq_id', 'DESC').limit(recent).getMany();
    const returned = new Set(
      rows
        .filter((m) => m.message_type === 'tool_return_message')
        .map((m) => String(m.payload.tool_call_id)),
    );
    return toolCallIds.every((id) => returned.has(id));
  }

  /** Where the conversation's context starts and its summary; null: all of its history is in context. */
  async messageContext(
    agentId: string,
    conversationId: string | null,
  ): Promise<MessageContext | null> {
    return messageContextOf.one(this.ds, [agentId, conversationId ?? '']);
  }

  /** Moves the conversation's context start (and sets its summary); bumps the version. */
  async setMessageContext(
    tenantId: string,
    agentId: string,
    conversationId: string | null,
    fields: { start_seq: number; summary: string | null; inherited?: SharedRange[] | null },
    at: number,
  ): Promise<void> {
    const prev = await this.messageContext(agentId, conversationId);
    const row: MessageContextEntity = {
      agent_id: agentId,
      conversation_key: conversationId ?? '',
      tenant_id: tenantId,
      start_seq: fields.start_seq,
      summary: fields.summary,
      version: (prev?.version ?? 0) + 1,
      inherited: fields.inherited !== undefined ? fields.inherited : (prev?.inherited ?? null),
      updated_at: at,
    };
    await this.writes.run((em) => em.getRepository(MessageContextEntity).save(row));
    this.windows.delete(historyKey(agentId, conversationId));
  }

  /** The agent's highest message seq_id (0 without messages). */
  async maxSeq(agentId: string): Promise<number> {
    const r = await this.ds
      .getRepository(MessageEntity)
      .createQueryBuilder('m')
      .select('MAX(m.seq_id)', 'max')
      .where('m.agent_id = :agentId', { agentId })
      .getRawOne<{ max: string | number | null }>();
    return Number(r?.max ?? 0);
  }

  /**
   * Drops what this instance keeps for the agent (its seq counter, its conversations' context windows,
   * its parked batch); they are read again from the database on next use. The one invalidation point
   * for another owner's writes.
   */
  forget(agentId: string): void {
    this.parkedBatches.delete(agentId);
    for (const key of [...this.windows.keys()])
      if (key.startsWith(`${agentId}|`)) this.windows.delete(key);
    this.seq.delete(agentId);
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
    const context = await this.messageContext(agentId, page.conversationId ?? null);
    inConversation(qb, page.conversationId ?? null, context?.inherited ?? null);
    // a cursor that is none of the agent's messages is refused, as every list's: paging on from the
    // first page again would never end
    const cursor = async (id: string) => {
      const m = await this.ds.getRepository(MessageEntity).findOneBy({ id, agent_id: agentId });
      if (!m)
        throw badRequest(
          'UNKNOWN_CURSOR',
          `cursor ${JSON.stringify(id)} is not a message of this agent`,
        );
      return m.seq_id;
    };
    // cursors are relative to the order, as Letta's: with desc, `after` walks to older messages
    const afterOp = page.order === 'asc' ? '>' : '<';
    const beforeOp = page.order === 'asc' || page.beforeIsOlder ? '<' : '>';
    if (page.before) qb.andWhere(`m.seq_id ${beforeOp} :bs`, { bs: await cursor(page.before) });
    if (page.after) qb.andWhere(`m.seq_id ${afterOp} :as`, { as: await cursor(page.after) });
    return readWithin(qb.orderBy('m.seq_id', page.order === 'asc' ? 'ASC' : 'DESC'), 'm', page);
  }

  /**
   * User and assistant messages containing the text, newest first: conversation_search (one agent) and
   * Letta's message search (the tenant's, or one agent's or conversation's). A bounded scan
   * (limits.search_scan_*: the newest rows of the scope, the first characters of each) in one of the
   * tenant's scan slots, read SCAN_CHUNK rows a statement: the database takes statements in turn, so
   * another tenant's waits for one chunk (a few ms), not a whole scan (0.2 s on SQLite).
   */
  searchMessages(
    tenantId: string,
    agentId: string | null,
    query: string,
    page: PageBounds,
    within: MessageSearchScope = {},
  ): Promise<MessageEntity[]> {
    const repo = this.ds.getRepository(MessageEntity);
    const newest = repo
      .createQueryBuilder('s')
      .select('s.id', 'id')
      .where('s.tenant_id = :tenantId', { tenantId });
    if (agentId) newest.andWhere('s.agent_id = :agentId', { agentId });
    const { conversationId, afterMs, upToMs } = within;
    if (conversationId) newest.andWhere('s.conversation_id = :conversationId', { conversationId });
    if (afterMs !== undefined) newest.andWhere('s.created_at > :afterMs', { afterMs });
    if (upToMs !== undefined) newest.andWhere('s.created_at <= :upToMs', { upToMs });
    newest
      .andWhere('s.message_type IN (:...types)', { types: ['user_message', 'assistant_message'] })
      .orderBy('s.created_at', 'DESC')
      .addOrderBy('s.seq_id', 'DESC')
      .limit(this.searchScan.rows);
    const needle = query.toLowerCase();
    return this.scans.run(tenantId, async () => {
      const ids = (await newest.getRawMany<{ id: string }>()).map((r) => r.id);
      const hits: string[] = [];
      for (let at = 0; at < ids.length && hits.length < page.limit; at += SCAN_CHUNK) {
        const chunk = ids.slice(at, at + SCAN_CHUNK);
        const chars = this.searchScan.chars;
        // Letta's search leaves heartbeats out: a user message that says "heartbeat" where the search
        // looks is a candidate, read whole to tell (no more at a time than the page still needs)
        const found = await repo
          .createQueryBuilder('m')
          .select('m.id', 'id')
          .addSelect(
            `CASE WHEN m.message_type = 'user_message' AND ${containsSql(this.ds, 'm.payload', 'beat', chars)} THEN 1 ELSE 0 END`,
            'maybe',
          )
          .where('m.id IN (:...chunk)', { chunk })
          .andWhere(containsSql(this.ds, 'm.payload', 'needle', chars), { needle })
          .setParameter('beat', 'heartbeat')
          .getRawMany<{ id: string; maybe: number | string }>();
        const maybe = new Map(found.map((r) => [r.id, Number(r.maybe) === 1]));
        // in the scan's order (newest first)
        const matched = chunk.filter((id) => maybe.has(id));
        for (let i = 0; i < matched.length && hits.length < page.limit;) {
          const next = matched.slice(i, i + page.limit - hits.length);
          i += next.length;
          const beats = await this.heartbeatsAmong(next.filter((id) => maybe.get(id)));
          hits.push(...next.filter((id) => !beats.has(id)));
        }
      }
      if (hits.length === 0) return [];
      const qb = repo
        .createQueryBuilder('m')
        .where('m.id IN (:...hits)', { hits: hits.slice(0, page.limit) })
        .orderBy('m.created_at', 'DESC')
        .addOrderBy('m.seq_id', 'DESC');
      return readWithin(qb, 'm', page);
    });
  }

  /** Which of these (user) messages are heartbeats (`isHeartbeatContent`). */
  private async heartbeatsAmong(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.ds
      .getRepository(MessageEntity)
      .find({ where: { id: In(ids) }, select: { id: true, payload: true } });
    return new Set(rows.filter((m) => isHeartbeatContent(m.payload.content)).map((m) => m.id));
  }

  /** The tenant's messages across agents (Letta's `GET /v1/messages/`), by time; cursors relative to the order. */
  async tenantMessages(
    tenantId: string,
    page: MessagePage & { conversationId?: string | null },
  ): Promise<MessageEntity[]> {
    const repo = this.ds.getRepository(MessageEntity);
    const qb = repo.createQueryBuilder('m').where('m.tenant_id = :tenantId', { tenantId });
    if (page.conversationId) qb.andWhere('m.conversation_id = :c', { c: page.conversationId });
    const dir = page.order === 'asc' ? 'ASC' : 'DESC';
    await timeCursors(qb, 'm', (id) => repo.findOneBy({ id, tenant_id: tenantId }), page);
    return readWithin(qb.orderBy('m.created_at', dir).addOrderBy('m.id', dir), 'm', page);
  }

  findMessage(tenantId: string, id: string): Promise<MessageEntity | null> {
    return this.ds.getRepository(MessageEntity).findOneBy({ id, tenant_id: tenantId });
  }

  /** The tenant's steps (Letta's `GET /v1/steps/`), by time; cursors relative to the order. */
  async listSteps(tenantId: string, q: StepsQuery): Promise<StepEntity[]> {
    if (q.matchesNone) return [];
    const repo = this.ds.getRepository(StepEntity);
    const qb = repo.createQueryBuilder('s').where('s.tenant_id = :tenantId', { tenantId });
    if (q.agentIds) qb.andWhere('s.agent_id IN (:...agentIds)', { agentIds: q.agentIds });
    if (q.feedback) qb.andWhere('s.feedback = :feedback', { feedback: q.feedback });
    if (q.hasFeedback !== undefined)
      qb.andWhere(q.hasFeedback ? 's.feedback IS NOT NULL' : 's.feedback IS NULL');
    if (q.model) qb.andWhere('s.model = :model', { model: q.model });
    if (q.startMs !== undefined) qb.andWhere('s.created_at > :startMs', { startMs: q.startMs });
    if (q.endMs !== undefined) qb.andWhere('s.created_at < :endMs', { endMs: q.endMs });
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    await timeCursors(qb, 's', (id) => repo.findOneBy({ id, tenant_id: tenantId }), q);
    return readWithin(qb.orderBy('s.created_at', dir).addOrderBy('s.id', dir), 's', q);
  }

  findStep(tenantId: string, id: string): Promise<StepEntity | null> {
    return this.ds.getRepository(StepEntity).findOneBy({ id, tenant_id: tenantId });
  }

  /** Letta's feedback on a step: `feedback` replaced (null clears it), `tags` replaced when given. */
  async setStepFeedback(
    tenantId: string,
    id: string,
    feedback: StepFeedback | null,
    tags: string[] | null,
  ): Promise<StepEntity | null> {
    const fields: Partial<StepEntity> = { feedback, ...(tags ? { tags } : {}) };
    await this.writes.run((em) =>
      em.getRepository(StepEntity).update({ id, tenant_id: tenantId }, fields),
    );
    return this.findStep(tenantId, id);
  }

  runMessages(tenantId: string, runId: string): Promise<MessageEntity[]> {
    return this.ds
      .getRepository(MessageEntity)
      .find({ where: { tenant_id: tenantId, run_id: runId }, order: { seq_id: 'ASC' } });
  }

  /** A page of a run's messages: the first `limit` after seq_id `afterSeq`, in seq_id order. */
  runMessagesAfter(
    tenantId: string,
    runId: string,
    afterSeq: number,
    limit: number,
  ): Promise<MessageEntity[]> {
    return this.ds.getRepository(MessageEntity).find({
      where: { tenant_id: tenantId, run_id: runId, seq_id: MoreThan(afterSeq) },
      order: { seq_id: 'ASC' },
      take: limit,
    });
  }

  batchMessages(batchId: string, types: string[]): Promise<MessageEntity[]> {
    return this.ds.getRepository(MessageEntity).find({
      where: { batch_id: batchId, message_type: In(types) },
      order: { seq_id: 'ASC' },
    });
  }

  /**
   * A deleted agent's history: its messages and message contexts are deleted, and its runs (kept, as
   * their ids are in webhooks, audits and clients' hands) keep no copy of their requests' messages, so the
   * tenant's bytes (`quotas.stored_bytes`) go down by them. Run again by a run that stored its last turn
   * after its agent was deleted.
   */
  async deleteHistory(tenantId: string, agentId: string): Promise<void> {
    const pg = this.ds.options.type === 'postgres';
    const runs = sqlTable((this.ds.options as { schema?: string }).schema, 'runs');
    // (json, not jsonb, on PostgreSQL: a message may hold an escaped NUL, which jsonb refuses)
    const stripped = pg
      ? `COALESCE((SELECT json_object_agg(e.key, CASE WHEN e.key = 'messages' THEN '[]'::json ELSE e.value END)::text
          FROM json_each(input::json) AS e WHERE e.key NOT IN ('approvals', 'client_tools')), input)`
      : `json_set(json_remove(input, '$.approvals', '$.client_tools'), '$.messages', json('[]'))`;
    await this.writes.run(async (em) => {
      await em.delete(MessageEntity, { tenant_id: tenantId, agent_id: agentId });
      await em.delete(MessageContextEntity, { tenant_id: tenantId, agent_id: agentId });
      await em.query(
        `UPDATE ${runs} SET input = ${stripped} WHERE tenant_id = ${pg ? '$1' : '?'} AND agent_id = ${pg ? '$2' : '?'}`,
        [tenantId, agentId],
      );
    });
    this.forget(agentId);
  }

  /** Loads the agent's seq counter, so that takeSeq can answer at once. */
  async loadSeq(agentId: string): Promise<void> {
    await this.withSeq(agentId, []);
  }

  /**
   * The agent's next seq_id for a frame that is not stored (a token-streaming chunk), so that every frame
   * of a stream has one; null when the counter is not loaded (loadSeq).
   */
  takeSeq(agentId: string): number | null {
    const next = this.seq.get(agentId);
    if (next === undefined) return null;
    this.seq.set(agentId, next + 1);
    return next + 1;
  }

  private async withSeq(agentId: string, messages: NewMessage[]): Promise<MessageEntity[]> {
    let next = this.seq.get(agentId);
    if (next === undefined) {
      let init = this.seqInit.get(agentId);
      if (!init) {
        init = this.maxSeq(agentId);
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

/** `after` / `before` by (created_at, id), relative to the order as Letta's cursors are. */
async function timeCursors<T extends ObjectLiteral>(
  qb: SelectQueryBuilder<T>,
  alias: string,
  find: (id: string) => Promise<{ id: string; created_at: number } | null>,
  page: { after?: string; before?: string; order: 'asc' | 'desc' },
): Promise<void> {
  for (const [key, forward] of [
    ['after', true],
    ['before', false],
  ] as const) {
    const id = page[key];
    const at = id ? await find(id) : null;
    if (!at) continue;
    const op = (page.order === 'asc') === forward ? '>' : '<';
    qb.andWhere(
      `(${alias}.created_at ${op} :${key}At OR (${alias}.created_at = :${key}At AND ${alias}.id ${op} :${key}Id))`,
      { [`${key}At`]: at.created_at, [`${key}Id`]: at.id },
    );
  }
}

/** Messages of the conversation (null: the agent's default one), with the ranges a fork shares. */
function inConversation(
  qb: SelectQueryBuilder<MessageEntity>,
  conversationId: string | null,
  inherited: SharedRange[] | null,
): void {
  const own = (key: string) =>
    conversationId === null ? 'm.conversation_id IS NULL' : `m.conversation_id = :${key}`;
  const parts = [own('conv')];
  const params: Record<string, unknown> = { conv: conversationId };
  (inherited ?? []).forEach((r, i) => {
    const where =
      r.conversation_id === null ? 'm.conversation_id IS NULL' : `m.conversation_id = :ic${i}`;
    parts.push(`(${where} AND m.seq_id BETWEEN :if${i} AND :it${i})`);
    Object.assign(params, {
      [`ic${i}`]: r.conversation_id,
      [`if${i}`]: r.from_seq,
      [`it${i}`]: r.to_seq,
    });
  });
  qb.andWhere(`(${parts.join(' OR ')})`, params);
}

const historyKey = (agentId: string, conversationId: string | null) =>
  `${agentId}|${conversationId ?? ''}`;

export function toHistory(m: MessageEntity): HistoryMessage {
  return { id: m.id, message_type: m.message_type, step_id: m.step_id, payload: m.payload };
}
