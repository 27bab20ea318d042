import { durationProblem, type InputLimits } from '../limits';
import type { ConstraintCompiler } from './constraint';

/**
 * What a person can answer to a consent request, and what each answer means. Pure: validation of
 * a raw decision (from a WebSocket frame or a REST body) and the grant it implies.
 */
export const CONSENT_DECISIONS = [
  'approve_once',
  'approve_for_duration',
  'approve_for_scope',
  'deny',
] as const;
export type ConsentDecision = (typeof CONSENT_DECISIONS)[number];

/** A grant-creating decision: it covers later calls of the same scope. */
export type GrantDecision = 'approve_for_duration' | 'approve_for_scope';

/** Who resolved a request, through which channel. */
export type ConsentChannel = 'ws' | 'rest' | 'webhook' | 'system';

export interface DecisionInput {
  decision: ConsentDecision;
  seconds?: number;
  constraint?: Record<string, unknown>;
  reason?: string;
}

export interface Problem {
  path: string;
  message: string;
}

export const MAX_REASON_LENGTH = 2000;
export const MAX_CONSTRAINT_BYTES = 16 * 1024;

export function isApproval(decision: ConsentDecision): boolean {
  return decision !== 'deny';
}

export function createsGrant(decision: ConsentDecision): decision is GrantDecision {
  return decision === 'approve_for_duration' || decision === 'approve_for_scope';
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates a decision as a client sent it. `seconds` belongs to approve_for_duration (required there),
 * `constraint` to the grant-creating decisions; both are refused elsewhere so a client's mistake is loud.
 */
export function validateDecisionInput(
  raw: Record<string, unknown>,
  constraints: ConstraintCompiler,
  limits: Pick<InputLimits, 'max_duration_seconds'>,
): { ok: true; value: DecisionInput } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = [];
  const decision = raw.decision;
  if (
    typeof decision !== 'string' ||
    !(CONSENT_DECISIONS as readonly string[]).includes(decision)
  ) {
    problems.push({ path: 'decision', message: `must be one of ${CONSENT_DECISIONS.join(', ')}` });
    return { ok: false, problems };
  }
  const d = decision as ConsentDecision;
  const value: DecisionInput = { decision: d };

  if (raw.seconds !== undefined && raw.seconds !== null) {
    const s = raw.seconds;
    if (d !== 'approve_for_duration') {
      problems.push({ path: 'seconds', message: 'is only allowed with approve_for_duration' });
    } else {
      // whole seconds from 1 (1e-300 made a grant expired at birth) to limits.max_duration_seconds
      const problem = durationProblem(s, 'seconds', limits);
      if (problem) problems.push(problem);
      else value.seconds = s as number;
    }
  } else if (d === 'approve_for_duration') {
    problems.push({ path: 'seconds', message: 'is required with approve_for_duration' });
  }

  if (raw.constraint !== undefined && raw.constraint !== null) {
    const c = raw.constraint;
    if (!createsGrant(d)) {
      problems.push({
        path: 'constraint',
        message: 'is only allowed with approve_for_duration or approve_for_scope',
      });
    } else if (!isObj(c)) {
      problems.push({ path: 'constraint', message: 'must be a JSON Schema object' });
    } else if (JSON.stringify(c).length > MAX_CONSTRAINT_BYTES) {
      problems.push({
        path: 'constraint',
        message: `must be at most ${MAX_CONSTRAINT_BYTES} bytes`,
      });
    } else {
      const compiled = constraints.compile(c, 'constraint');
      if (!compiled.ok) problems.push(...compiled.problems);
      else value.constraint = c;
    }
  }

  if (raw.reason !== undefined && raw.reason !== null) {
    if (
      typeof raw.reason !== 'string' ||
      raw.reason.length > MAX_REASON_LENGTH ||
      raw.reason.includes('\u0000') // PostgreSQL text cannot hold NUL
    ) {
      problems.push({
        path: 'reason',
        message: `must be a string of at most ${MAX_REASON_LENGTH} characters`,
      });
    } else value.reason = raw.reason;
  }
  return problems.length ? { ok: false, problems } : { ok: true, value };
}

/** When the grant a decision creates expires: null = until revoked; undefined = the decision creates none. */
export function grantExpiry(input: DecisionInput, decidedAt: number): number | null | undefined {
  switch (input.decision) {
    case 'approve_for_duration':
      return decidedAt + Math.round((input.seconds ?? 0) * 1000);
    case 'approve_for_scope':
      return null;
    case 'approve_once':
    case 'deny':
      return undefined;
  }
}
