import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { badRequest } from '../common/domain-error';
import { assertPrefixedId } from '../common/ids';
import { toAuditResponse, toGrantResponse, toRequestResponse } from './consent.mappers';
import { PermissionBrokerService } from './permission-broker.service';

const STATUSES = ['pending', 'resolved', 'all'] as const;

/** Consent requests and the audit log over REST; decisions here race WebSocket ones (first wins). */
@Controller('v1/consent')
export class ConsentController {
  constructor(private readonly broker: PermissionBrokerService) {}

  @Get('requests')
  async list(
    @Tenant() tenantId: string,
    @Query('status') status?: string,
    @Query('limit') limit?: string,
  ) {
    const s = status ?? 'pending';
    if (!(STATUSES as readonly string[]).includes(s))
      throw badRequest('VALIDATION_FAILED', `status must be one of ${STATUSES.join(', ')}`);
    const rows = await this.broker.listRequests(
      tenantId,
      s as (typeof STATUSES)[number],
      parseLimit(limit, 1000),
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
    @Query('after') after?: string,
    @Query('limit') limit?: string,
  ) {
    let afterId: number | undefined;
    if (after !== undefined) {
      afterId = Number(after);
      if (!Number.isInteger(afterId) || afterId < 0)
        throw badRequest('VALIDATION_FAILED', 'after must be an audit entry id');
    }
    const rows = await this.broker.listAudit(tenantId, {
      agentId: typeof agentId === 'string' ? agentId : undefined,
      requestId: typeof requestId === 'string' ? requestId : undefined,
      after: afterId,
      limit: parseLimit(limit, 1000),
    });
    return rows.map(toAuditResponse);
  }
}

export function parseLimit(raw: string | undefined, max: number): number {
  if (raw === undefined) return max;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw badRequest('VALIDATION_FAILED', `limit must be a whole number from 1 to ${max}`);
  return n;
}
