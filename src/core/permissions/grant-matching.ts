import type { ConstraintCompiler } from './constraint';
import type { GrantDecision } from './consent-decision';

/** A standing grant as the matcher sees it (times in epoch ms). */
export interface GrantView {
  id: string;
  agentId: string;
  scope: string;
  decision: GrantDecision;
  expiresAt: number | null;
  constraint: Record<string, unknown> | null;
  revokedAt: number | null;
  createdAt: number;
}

export interface CallView {
  agentId: string;
  scope: string;
  arguments: Record<string, unknown>;
}

export type Coverage =
  | { covers: true }
  | { covers: false; why: 'agent' | 'scope' | 'revoked' | 'expired' | 'constraint' };

/** Whether one grant covers one call at `now`. Expiry is exclusive: at expiresAt the grant is over. */
export function grantCoverage(
  grant: GrantView,
  call: CallView,
  now: number,
  constraints: ConstraintCompiler,
): Coverage {
  if (grant.agentId !== call.agentId) return { covers: false, why: 'agent' };
  if (grant.scope !== call.scope) return { covers: false, why: 'scope' };
  if (grant.revokedAt !== null && grant.revokedAt <= now) return { covers: false, why: 'revoked' };
  if (grant.expiresAt !== null && now >= grant.expiresAt) return { covers: false, why: 'expired' };
  if (grant.constraint && !constraints.satisfies(grant.constraint, call.arguments))
    return { covers: false, why: 'constraint' };
  return { covers: true };
}

/** The grant that covers the call, newest first (the latest decision is the person's current intent). */
export function findCoveringGrant(
  grants: readonly GrantView[],
  call: CallView,
  now: number,
  constraints: ConstraintCompiler,
): GrantView | null {
  const newestFirst = [...grants].sort((a, b) => b.createdAt - a.createdAt);
  for (const g of newestFirst) if (grantCoverage(g, call, now, constraints).covers) return g;
  return null;
}
