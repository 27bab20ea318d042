import type {
  ConsentAuditEntity,
  ConsentGrantEntity,
  ConsentRequestEntity,
} from './consent.entities';
import type { ConsentResolved } from './permission-broker.service';

/** Wire shapes: snake_case, ISO times; the only place entity fields become API fields. */
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The request as a consent dialog shows it (the `request` of a consent.request frame). */
export function toRequestFrame(r: ConsentRequestEntity) {
  return {
    id: r.id,
    agent_id: r.agentId,
    run_id: r.runId,
    tool_call_id: r.toolCallId,
    tool_name: r.toolName,
    arguments: r.arguments,
    scope: r.scope,
    reason: r.reason,
    created_at: iso(r.createdAt),
    expires_at: iso(r.expiresAt),
  };
}

/** The request over REST: the frame's fields plus its resolution. */
export function toRequestResponse(r: ConsentRequestEntity) {
  return {
    ...toRequestFrame(r),
    batch_id: r.batchId,
    status: r.status,
    decision: r.decision,
    decision_reason: r.decisionReason,
    decided_by: r.decidedBy,
    channel: r.channel,
    decided_at: iso(r.decidedAt),
    grant_id: r.grantId,
    consumed_at: iso(r.consumedAt),
  };
}

export function toGrantResponse(g: ConsentGrantEntity) {
  return {
    id: g.id,
    agent_id: g.agentId,
    scope: g.scope,
    decision: g.decision,
    expires_at: iso(g.expiresAt),
    constraint: g.constraint,
    created_at: iso(g.createdAt),
    revoked_at: iso(g.revokedAt),
    request_id: g.requestId,
  };
}

export function toAuditResponse(a: ConsentAuditEntity) {
  return {
    id: a.id,
    at: iso(a.at),
    event: a.event,
    agent_id: a.agentId,
    request_id: a.requestId,
    grant_id: a.grantId,
    run_id: a.runId,
    tool_call_id: a.toolCallId,
    tool_name: a.toolName,
    scope: a.scope,
    decision: a.decision,
    reason: a.reason,
    actor: a.actor,
    channel: a.channel,
  };
}

export function toResolvedFrame(
  e: Pick<
    ConsentResolved,
    'requestId' | 'decision' | 'reason' | 'decidedBy' | 'grantId' | 'channel'
  >,
) {
  return {
    type: 'consent.resolved' as const,
    request_id: e.requestId,
    decision: e.decision,
    ...(e.reason !== null ? { reason: e.reason } : {}),
    decided_by: e.decidedBy,
    ...(e.grantId !== null ? { grant_id: e.grantId } : {}),
    channel: e.channel,
  };
}

/** The consent.resolved frame of a request that has just been resolved. */
export function resolvedFrameOf(r: ConsentRequestEntity) {
  return toResolvedFrame({
    requestId: r.id,
    decision: r.decision ?? 'deny',
    reason: r.decisionReason,
    decidedBy: r.decidedBy ?? 'system',
    grantId: r.grantId,
    channel: r.channel ?? 'system',
  });
}
