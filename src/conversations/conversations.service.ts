import { Inject, Injectable } from '@nestjs/common';
import {
  badRequest,
  conflict,
  notFound,
  validationFailed,
  type ValidationProblem,
} from '../common/domain-error';
import { CLOCK } from '../common/clock';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ID_GENERATOR, isPrefixedId } from '../common/ids';
import type { Clock, IdGenerator } from '../core/ports';
import { AgentsService } from '../agents/agents.service';
import { HistoryService } from '../processing/history.service';
import type { MessageEntity } from '../processing/entities/message.entity';
import type { RunEntity } from '../processing/entities/run.entity';
import { CompactionSettings, MessageContextService } from '../processing/message-context.service';
import { MessagingService } from '../processing/messaging.service';
import { ProcessingRepository } from '../processing/processing.repository';
import { TenantQuotas } from '../quotas/tenant-quotas';
import type { HistoryQuery } from '../processing/query.dto';
import type { LettaView } from '../processing/message.mapper';
import { ConversationEntity } from './conversation.entity';
import { ConversationPage, ConversationsRepository } from './conversations.repository';

/** Where a conversation route points: a conversation of an agent, or the agent's default one. */
export interface ConversationTarget {
  agentId: string;
  /** null: the agent's default conversation (Letta's `default` with `agent_id`). */
  conversationId: string | null;
  row: ConversationEntity | null;
}

const SUMMARY_MAX = 10_000;

/**
 * Letta's conversations: separate histories of one agent. Their messages go through the agent's one
 * mailbox (one batch at a time per agent), each conversation's history stays its own.
 */
@Injectable()
export class ConversationsService {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: ConversationsRepository,
    private readonly agents: AgentsService,
    private readonly history: HistoryService,
    private readonly messaging: MessagingService,
    private readonly runs: ProcessingRepository,
    private readonly contexts: MessageContextService,
    private readonly quotas: TenantQuotas,
  ) {}

  async create(tenantId: string, agentId: unknown, body: unknown): Promise<ConversationEntity> {
    if (typeof agentId !== 'string' || !isPrefixedId('agent', agentId)) {
      throw badRequest('VALIDATION_FAILED', 'agent_id (query) must be an agent id', {
        problems: [{ path: 'agent_id', message: 'must be an agent id' }],
      });
    }
    await this.agents.get(tenantId, agentId);
    await this.assertRoom(tenantId, agentId);
    const fields = parseFields(body);
    const row = this.newRow(tenantId, agentId, fields.summary ?? null, false);
    await this.repo.insert(row);
    return row;
  }

  /**
   * Letta's fork: a new conversation of the source's agent that shares the source's in-context
   * messages (see MessageContextService.fork); `hidden` leaves it out of listings.
   */
  async fork(
    tenantId: string,
    source: ConversationTarget,
    opts: { messageId: string | null; hidden: boolean },
  ): Promise<ConversationEntity> {
    await this.assertRoom(tenantId, source.agentId);
    const row = this.newRow(tenantId, source.agentId, null, opts.hidden);
    await this.contexts.fork(
      tenantId,
      source.agentId,
      source.conversationId,
      row.id,
      opts.messageId,
    );
    await this.repo.insert(row);
    return row;
  }

  /**
   * `limits.max_conversations_per_agent`, counted before the insert, and the tenant's quota
   * (`quotas.conversations`), which the insert checks again exactly: a fork's context is written first.
   */
  private async assertRoom(tenantId: string, agentId: string): Promise<void> {
    const max = this.config.limits.max_conversations_per_agent;
    if ((await this.repo.countForAgent(tenantId, agentId)) >= max)
      throw conflict(
        'CONVERSATION_LIMIT',
        `an agent may have at most ${max} conversations (limits.max_conversations_per_agent)`,
        { max },
      );
    await this.quotas.assertRoom(tenantId, 'conversations', 1);
  }

  private newRow(
    tenantId: string,
    agentId: string,
    summary: string | null,
    hidden: boolean,
  ): ConversationEntity {
    const now = this.clock.now();
    return {
      id: this.ids.prefixed('conv'),
      tenant_id: tenantId,
      agent_id: agentId,
      summary,
      archived: false,
      hidden,
      created_at: now,
      updated_at: now,
      last_message_at: null,
    };
  }

  async get(tenantId: string, id: string): Promise<ConversationEntity> {
    const row = isPrefixedId('conv', id) ? await this.repo.find(tenantId, id) : null;
    if (!row) throw notFound('conversation', id);
    return row;
  }

  /** The conversation with the ids of its in-context messages (a single retrieve answers them). */
  async getWithContext(
    tenantId: string,
    id: string,
  ): Promise<{ row: ConversationEntity; inContextIds: string[] }> {
    const row = await this.get(tenantId, id);
    return { row, inContextIds: await this.contexts.inContextMessageIds(row.agent_id, row.id) };
  }

  list(tenantId: string, page: ConversationPage): Promise<ConversationEntity[]> {
    return this.repo.list(tenantId, page);
  }

  async update(tenantId: string, id: string, body: unknown): Promise<ConversationEntity> {
    const row = await this.get(tenantId, id);
    const fields = parseFields(body);
    if (fields.summary !== undefined) row.summary = fields.summary;
    if (fields.archived !== undefined) row.archived = fields.archived;
    row.updated_at = this.clock.now();
    return this.repo.update(row);
  }

  /** Deleting a conversation cancels what runs in it; its messages stay (as the agent's history rows). */
  async delete(tenantId: string, id: string): Promise<void> {
    const row = await this.get(tenantId, id);
    await this.cancel(tenantId, { agentId: row.agent_id, conversationId: id, row });
    await this.repo.delete(tenantId, id);
  }

  /**
   * `{id}` or `default` with `agent_id` (Letta's agent-direct mode; an agent id in place of the
   * conversation id is Letta's deprecated form of it).
   */
  async target(tenantId: string, id: string, agentId: unknown): Promise<ConversationTarget> {
    if (isPrefixedId('agent', id)) return this.target(tenantId, 'default', id);
    if (id === 'default') {
      if (typeof agentId !== 'string' || !isPrefixedId('agent', agentId)) {
        throw badRequest(
          'AGENT_ID_REQUIRED',
          'the default conversation is addressed with agent_id (query or body)',
        );
      }
      await this.agents.get(tenantId, agentId);
      return { agentId, conversationId: null, row: null };
    }
    const row = await this.get(tenantId, id);
    return { agentId: row.agent_id, conversationId: row.id, row };
  }

  messages(
    tenantId: string,
    t: ConversationTarget,
    q: HistoryQuery,
    view: LettaView,
  ): Promise<MessageEntity[]> {
    const page = { ...q, conversationId: t.conversationId, beforeIsOlder: true };
    return this.history.list(tenantId, t.agentId, page, view);
  }

  /** The conversation's newest run, whose stream `POST /v1/conversations/{id}/stream` resumes. */
  async latestRun(tenantId: string, t: ConversationTarget): Promise<RunEntity> {
    const run = await this.runs.latestRun(tenantId, t.agentId, t.conversationId);
    if (!run) throw notFound('run of conversation', t.conversationId ?? 'default');
    return run;
  }

  async touch(t: ConversationTarget): Promise<void> {
    if (t.conversationId) await this.repo.touch(t.conversationId, this.clock.now());
  }

  /** Cancels the conversation's queued, running and parked runs; `{}` when none (as Letta answers). */
  async cancel(tenantId: string, t: ConversationTarget): Promise<Record<string, string>> {
    const ids = await this.runs.openRunIds(tenantId, t.conversationId, t.agentId);
    if (ids.length === 0) return {};
    return this.messaging.stopRuns(tenantId, t.agentId, ids, 'cancel');
  }

  /** Letta's compaction of the conversation's in-context messages (see MessageContextService). */
  compact(tenantId: string, t: ConversationTarget, settings: CompactionSettings) {
    return this.contexts.compact(tenantId, t.agentId, t.conversationId, settings);
  }
}

function parseFields(body: unknown): { summary?: string; archived?: boolean } {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw validationFailed([{ path: '', message: 'body must be a JSON object' }]);
  }
  const b = body as Record<string, unknown>;
  const problems: ValidationProblem[] = [];
  const out: { summary?: string; archived?: boolean } = {};
  // as Letta's update (it sets only the fields given not null), null keeps the summary
  const text = b.summary ?? b.description;
  if (text !== undefined && text !== null) {
    if (typeof text !== 'string' || text.length > SUMMARY_MAX) {
      problems.push({
        path: 'summary',
        message: `must be a text of at most ${SUMMARY_MAX} characters`,
      });
    } else out.summary = text;
  }
  if (b.archived !== undefined && b.archived !== null) {
    if (typeof b.archived !== 'boolean')
      problems.push({ path: 'archived', message: 'must be a boolean' });
    else out.archived = b.archived;
  }
  if (problems.length) throw validationFailed(problems);
  return out;
}
