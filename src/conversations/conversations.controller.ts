import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import type { Response } from 'express';
import { AgentsService } from '../agents/agents.service';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { validationFailed, type ValidationProblem } from '../common/domain-error';
import { isPrefixedId } from '../common/ids';
import { toLettaMessage } from '../processing/message.mapper';
import { parseCompactionRequest } from '../processing/message-context.service';
import { MessageResponder } from '../processing/message-responder';
import { parseHistoryQuery, parseResumeStream } from '../processing/query.dto';
import { ConversationEntity } from './conversation.entity';
import { ConversationsService } from './conversations.service';

const iso = (ms: number | null) => (ms == null ? null : new Date(ms).toISOString());

/** A conversation in Letta's shape (its in-context message ids on a single retrieve only). */
function toLettaConversation(c: ConversationEntity, inContextIds: string[] | null = null) {
  return {
    id: c.id,
    agent_id: c.agent_id,
    summary: c.summary,
    description: c.summary,
    archived: c.archived,
    archived_at: null,
    created_at: iso(c.created_at),
    updated_at: iso(c.updated_at),
    last_message_at: iso(c.last_message_at),
    in_context_message_ids: inContextIds,
    model: null,
    model_settings: null,
    context_window_limit: null,
    // no users here (Letta's org members)
    created_by_id: null,
    last_updated_by_id: null,
  };
}

const agentIdOf = (query: Record<string, unknown>, body: unknown) =>
  query.agent_id ??
  (typeof body === 'object' && body !== null
    ? (body as Record<string, unknown>).agent_id
    : undefined);

/** Letta's conversations: `/v1/conversations*` (the `default` one with `agent_id` is the agent's own history). */
@Controller('v1/conversations')
export class ConversationsController {
  constructor(
    private readonly conversations: ConversationsService,
    private readonly responder: MessageResponder,
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(200)
  async create(
    @Tenant() tenant: string,
    @Query() query: Record<string, unknown>,
    @Body() body: unknown,
  ) {
    return toLettaConversation(
      await this.conversations.create(tenant, agentIdOf(query, body), body),
    );
  }

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Record<string, unknown>) {
    const page = parseHistoryQuery(
      { limit: query.limit, order: query.order, after: query.after },
      this.config.limits,
    );
    const archived = query.archive_status ?? 'unarchived';
    if (archived !== 'unarchived' && archived !== 'archived' && archived !== 'all') {
      throw validationFailed([
        { path: 'archive_status', message: 'must be unarchived, archived or all' },
      ]);
    }
    const agentId = typeof query.agent_id === 'string' ? query.agent_id : undefined;
    const search = query.summary_search;
    if (search !== undefined && (typeof search !== 'string' || search.length > 200))
      throw validationFailed([
        { path: 'summary_search', message: 'must be a text of at most 200 characters' },
      ]);
    const rows = await this.conversations.list(tenant, {
      ...page,
      agentId,
      archived,
      ...(search ? { summarySearch: search } : {}),
    });
    return rows.map((c) => toLettaConversation(c));
  }

  @Get(':id')
  async get(@Tenant() tenant: string, @Param('id') id: string) {
    const { row, inContextIds } = await this.conversations.getWithContext(tenant, id);
    return toLettaConversation(row, inContextIds);
  }

  @Patch(':id')
  async update(@Tenant() tenant: string, @Param('id') id: string, @Body() body: unknown) {
    return toLettaConversation(await this.conversations.update(tenant, id, body));
  }

  /** Letta's fork: a new conversation sharing the source's in-context messages (query parameters only). */
  @Post(':id/fork')
  @HttpCode(200)
  async fork(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ) {
    const source = await this.conversations.target(tenant, id, query.agent_id);
    const problems: ValidationProblem[] = [];
    const messageId = query.message_id ?? null;
    if (
      messageId !== null &&
      (typeof messageId !== 'string' || !isPrefixedId('message', messageId))
    )
      problems.push({ path: 'message_id', message: 'must be a message id' });
    const hidden = query.hidden ?? 'false';
    if (hidden !== 'true' && hidden !== 'false')
      problems.push({ path: 'hidden', message: 'must be true or false' });
    if (problems.length) throw validationFailed(problems);
    return toLettaConversation(
      await this.conversations.fork(tenant, source, {
        messageId: messageId as string | null,
        hidden: hidden === 'true',
      }),
    );
  }

  @Delete(':id')
  @HttpCode(200)
  async delete(@Tenant() tenant: string, @Param('id') id: string) {
    await this.conversations.delete(tenant, id);
    return { message: `conversation ${id} deleted` };
  }

  /** Letta streams by default here (`streaming: false` answers JSON). */
  @Post(':id/messages')
  @HttpCode(200)
  async send(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @Body() body: unknown,
    @Res() res: Response,
  ): Promise<void> {
    const t = await this.conversations.target(tenant, id, agentIdOf(query, body));
    const streams = !(
      typeof body === 'object' &&
      body !== null &&
      (body as { streaming?: unknown }).streaming === false
    );
    const req = { ...this.responder.parse(body, streams), conversationId: t.conversationId };
    await this.conversations.touch(t);
    await this.responder.respond(tenant, t.agentId, req, res);
  }

  @Get(':id/messages')
  async messages(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ) {
    const t = await this.conversations.target(tenant, id, query.agent_id);
    const q = parseHistoryQuery(query, this.config.limits);
    return (await this.conversations.messages(tenant, t, q, q.view)).map(toLettaMessage);
  }

  /** Resumes the stream of the conversation's newest run (as `POST /v1/runs/{id}/stream` does). */
  @Post(':id/stream')
  @HttpCode(200)
  async stream(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @Body() body: unknown,
    @Res() res: Response,
  ): Promise<void> {
    const t = await this.conversations.target(tenant, id, agentIdOf(query, body));
    const run = await this.conversations.latestRun(tenant, t);
    await this.responder.resume(tenant, run, parseResumeStream(body), res);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ) {
    return this.conversations.cancel(
      tenant,
      await this.conversations.target(tenant, id, query.agent_id),
    );
  }

  /** The system prompt of the conversation's agent, compiled (as `POST /v1/agents/{id}/recompile`). */
  @Post(':id/recompile')
  @HttpCode(200)
  @Header('content-type', 'application/json; charset=utf-8')
  async recompile(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @Body() body: unknown,
  ): Promise<string> {
    const t = await this.conversations.target(tenant, id, agentIdOf(query, body));
    return JSON.stringify(await this.agents.systemPrompt(tenant, t.agentId));
  }

  @Post(':id/compact')
  @HttpCode(200)
  async compact(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @Body() body: unknown,
  ) {
    const t = await this.conversations.target(tenant, id, agentIdOf(query, body));
    return this.conversations.compact(tenant, t, parseCompactionRequest(body));
  }
}
