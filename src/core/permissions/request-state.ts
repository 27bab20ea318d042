import type { ConsentDecision } from './consent-decision';

/** The stored state of a consent request that decides what a repeated check for its tool_call_id returns. */
export interface RequestStateView {
  status: 'pending' | 'approved' | 'denied';
  decision: ConsentDecision | null;
  decisionReason: string | null;
  expiresAt: number;
  consumedAt: number | null;
}

export const TIMEOUT_REASON = 'timeout';
export const CONSUMED_REASON = 'approval already used for this tool call';
export const DEFAULT_DENY_REASON = 'denied by the user';

/**
 * What the broker does when the executor checks a tool call that already has a request:
 * - still waiting → `pending` (reuse it); waiting past its expiry → `expire` (deny with timeout);
 * - approved and not yet used → `consume` (approve exactly once);
 * - approved and already used → `denied`: an approval never runs a call twice (fails closed);
 * - denied → `denied` with the person's reason (or timeout).
 */
export type RecheckAction =
  | { action: 'pending' }
  | { action: 'expire' }
  | { action: 'consume' }
  | { action: 'denied'; reason: string };

export function recheckAction(state: RequestStateView, now: number): RecheckAction {
  switch (state.status) {
    case 'pending':
      return isExpired(state.expiresAt, now) ? { action: 'expire' } : { action: 'pending' };
    case 'approved':
      return state.consumedAt === null
        ? { action: 'consume' }
        : { action: 'denied', reason: CONSUMED_REASON };
    case 'denied':
      return { action: 'denied', reason: state.decisionReason || DEFAULT_DENY_REASON };
  }
}

/** A request expires at its expiry instant (inclusive), never before. */
export function isExpired(expiresAt: number, now: number): boolean {
  return now >= expiresAt;
}

/** The ids of pending requests whose time is up, oldest expiry first. */
export function dueForExpiry<T extends { id: string; expiresAt: number }>(
  pending: readonly T[],
  now: number,
): T[] {
  return pending
    .filter((r) => isExpired(r.expiresAt, now))
    .sort((a, b) => a.expiresAt - b.expiresAt);
}
