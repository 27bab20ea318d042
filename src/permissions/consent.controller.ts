import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { badRequest } from '../common/domain-error';
import { assertPrefixedId } from '../common/ids';
import { pageBounds } from '../common/page-limit';
import { CONSENT_DECISIONS } from '../core/permissions/consent-decision';
import { toAuditResponse, toGrantResponse, toRequestResponse } from './consent.mappers';
import { PermissionBrokerService } from './permission-broker.service';

const STATUSES = ['pending', 'resolved', 'all'] as const;

/** Consent requests and the audit log over REST; decisions here race WebSocket ones (first wins). */
@Controller('v1/consent')
export class ConsentController {
  constructor(
    private readonly broker: PermissionBrokerService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get('requests')
  async list(
    @Tenant() tenantId: string,
    @Query('status') status?: string,
    @Query('limit') limit?: string,
    @Query('agent_id') agentId?: string,
  ) {
    const s = status ?? 'pending';
    if (!(STATUSES as readonly string[]).includes(s))
      throw badRequest('VALIDATION_FAILED', `status must be one of ${STATUSES.join(', ')}`);
    // as GET /v1/grants?agent_id: a malformed id is a 404, another tenant's or an unknown agent has none
    if (agentId !== undefined) assertPrefixedId('agent', 'agent', agentId);
    const rows = await this.broker.listRequests(
      tenantId,
      s as (typeof STATUSES)[number],
      pageBounds(limit, this.config.limits.max_page_size, this.config.limits),
      agentId,
    );
    return rows.map(toRequestResponse);
  }

  @Get('requests/:id')
  async get(@Tenant() tenantId: string, @Param('id') id: string) {
    assertPrefixedId('consent', 'consent request', id);
    return toRequestResponse(await this.broker.getRequest(tenantId, id));
  }

  @Post('requests/:id/decision')
  @HttpCode(200)
  async decide(@Tenant() tenantId: string, @Param('id') id: string, @Body() body: unknown) {
    assertPrefixedId('consent', 'consent request', id);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw badRequest(
        'VALIDATION_FAILED',
        'body must be a JSON object {decision, seconds?, constraint?, reason?}',
      );
    const { request, grant } = await this.broker.decide(
      tenantId,
      id,
      body as Record<string, unknown>,
      'rest',
    );
    return { ...toRequestResponse(request), grant: grant ? toGrantResponse(grant) : null };
  }

  @Get('audit')
  async audit(
    @Tenant() tenantId: string,
    @Query('agent_id') agentId?: string,
    @Query('request_id') requestId?: string,
    @Query('tool_name') toolName?: string,
    @Query('decision') decision?: string,
    @Query('channel') channel?: string,
    @Query('since') since?: string,
    @Query('until') until?: string,
    @Query('order') order?: string,
    @Query('after') after?: string,
    @Query('before') before?: string,
    @Query('limit') limit?: string,
  ) {
    if (decision !== undefined && !(CONSENT_DECISIONS as readonly string[]).includes(decision))
      throw badRequest(
        'VALIDATION_FAILED',
        `decision must be one of ${CONSENT_DECISIONS.join(', ')}`,
      );
    if (channel !== undefined && !(CHANNELS as readonly string[]).includes(channel))
      throw badRequest('VALIDATION_FAILED', `channel must be one of ${CHANNELS.join(', ')}`);
    if (order !== undefined && order !== 'asc' && order !== 'desc')
      throw badRequest('VALIDATION_FAILED', 'order must be asc or desc');
    const rows = await this.broker.listAudit(tenantId, {
      agentId: text(agentId),
      requestId: text(requestId),
      toolName: text(toolName),
      decision,
      channel,
      since: instant(since, 'since'),
      until: instant(until, 'until'),
      newestFirst: order === 'desc',
      after: auditId(after, 'after'),
      before: auditId(before, 'before'),
      ...pageBounds(limit, this.config.limits.max_page_size, this.config.limits),
    });
    return rows.map(toAuditResponse);
  }
}

const CHANNELS = ['ws', 'rest', 'webhook', 'system'] as const;

const text = (v: unknown) => (typeof v === 'string' ? v : undefined);

function auditId(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw badRequest('VALIDATION_FAILED', `${name} must be an audit entry id`);
  return n;
}

/** An ISO date-time query parameter as epoch ms. */
function instant(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const ms = typeof raw === 'string' && raw.length <= 64 ? Date.parse(raw) : NaN;
  if (Number.isNaN(ms))
    throw badRequest('VALIDATION_FAILED', `${name} must be an ISO 8601 date-time`);
  return ms;
}
