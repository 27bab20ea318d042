import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { validationFailed, type ValidationProblem } from '../common/domain-error';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { readInstant } from '../core/limits';
import { pageBounds } from '../common/page-limit';
import { HistoryService } from './history.service';
import { toLettaMessage } from './message.mapper';
import { parseHistoryQuery } from './query.dto';

const iso = (ms: number) => new Date(ms).toISOString();
/** A message search's query, in characters: the API's and conversation_search's bound. */
export const SEARCH_QUERY_MAX = 1000;

/** Letta's tenant-wide messages: `GET /v1/messages/`, `GET /v1/messages/{id}`, `POST /v1/messages/search`. */
@Controller('v1/messages')
export class TenantMessagesController {
  constructor(
    private readonly history: HistoryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@Tenant() tenant: string, @Query() query: Record<string, unknown>) {
    const q = parseHistoryQuery(query, this.config.limits);
    const conversationId = typeof query.conversation_id === 'string' ? query.conversation_id : null;
    return (await this.history.tenantMessages(tenant, { ...q, conversationId }, q.view)).map(
      toLettaMessage,
    );
  }

  @Get(':messageId')
  async get(@Tenant() tenant: string, @Param('messageId') messageId: string) {
    return [toLettaMessage(await this.history.getMessage(tenant, messageId))];
  }

  /**
   * Case-insensitive text search (Letta's `fts` mode; `vector` and `hybrid` search the same way here);
   * `start_date` (created after) and `end_date` (on or before) bound it in time.
   */
  @Post('search')
  @HttpCode(200)
  async search(@Tenant() tenant: string, @Body() body: unknown) {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    // PostgreSQL refuses a NUL in any parameter: the query, an id, a date
    const problems: ValidationProblem[] = nulBytePaths(b);
    if (typeof b.query !== 'string' || b.query.length === 0 || b.query.length > SEARCH_QUERY_MAX)
      problems.push({
        path: 'query',
        message: `must be a text of 1 to ${SEARCH_QUERY_MAX} characters`,
      });
    const page = pageBounds(b.limit, 50, this.config.limits);
    const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
    const after = readInstant(b.start_date, 'start_date', problems);
    const upTo = readInstant(b.end_date, 'end_date', problems);
    // a filter of another type would otherwise be dropped, widening the search to every agent
    for (const k of ['agent_id', 'conversation_id'])
      if (b[k] !== undefined && b[k] !== null && typeof b[k] !== 'string')
        problems.push({ path: k, message: 'must be an id (a string)' });
    if (problems.length || typeof b.query !== 'string') throw validationFailed(problems);
    const rows = await this.history.search(tenant, b.query, page, str(b.agent_id), {
      conversationId: str(b.conversation_id),
      afterMs: after ?? undefined,
      upToMs: upTo ?? undefined,
    });
    return rows.map((m) => ({
      message_id: m.id,
      message_type: m.message_type,
      agent_id: m.agent_id,
      conversation_id: m.conversation_id,
      created_at: iso(m.created_at),
      content: m.payload.content,
    }));
  }
}
