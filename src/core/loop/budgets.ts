import type { StopReason } from './stop-reason';

/**
 * A batch's budgets beyond `max_steps`. The same names are used by the agent field `budgets`, by the
 * request body of `POST /v1/agents/{id}/messages` and by the `processing` config; null = not set here.
 */
export interface BudgetFields {
  max_tokens_per_batch: number | null;
  max_batch_seconds: number | null;
  model_call_timeout_seconds: number | null;
}

/** Each field's allowed range (whole numbers). */
export const BUDGET_LIMITS: Record<keyof BudgetFields, { min: number; max: number }> = {
  max_tokens_per_batch: { min: 1, max: 1_000_000_000 },
  max_batch_seconds: { min: 1, max: 86_400 },
  model_call_timeout_seconds: { min: 1, max: 3_600 },
};

export const BUDGET_FIELD_NAMES = Object.keys(BUDGET_LIMITS) as (keyof BudgetFields)[];

export const NO_BUDGETS: BudgetFields = {
  max_tokens_per_batch: null,
  max_batch_seconds: null,
  model_call_timeout_seconds: null,
};

type Bad = (path: string, message: string) => void;
const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** One budget value: null/undefined = not set; otherwise a whole number within its range. */
export function parseBudgetValue(
  field: keyof BudgetFields,
  v: unknown,
  path: string,
  bad: Bad,
): number | null {
  if (v === undefined || v === null) return null;
  const { min, max } = BUDGET_LIMITS[field];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    bad(path, `must be a whole number from ${min} to ${max}, or null`);
    return null;
  }
  return v;
}

/** The agent field `budgets`: an object with any of the fields (unknown keys refused), or null (none). */
export function parseBudgets(input: unknown, path: string, bad: Bad): BudgetFields | null {
  if (input === null) return { ...NO_BUDGETS };
  if (!isObj(input)) {
    bad(path, `must be an object {${BUDGET_FIELD_NAMES.join(', ')}} or null`);
    return null;
  }
  for (const k of Object.keys(input)) {
    if (!(k in BUDGET_LIMITS))
      bad(`${path}.${k}`, `unknown budget; expected one of ${BUDGET_FIELD_NAMES.join(', ')}`);
  }
  const out = { ...NO_BUDGETS };
  for (const k of BUDGET_FIELD_NAMES) out[k] = parseBudgetValue(k, input[k], `${path}.${k}`, bad);
  return out;
}

/** The budgets one batch runs under: request, else agent, else config. */
export interface BatchBudgets {
  maxSteps: number;
  /** null = no token budget. */
  maxTokens: number | null;
  maxBatchMs: number;
  /** undefined = the provider's configured timeout. */
  modelCallTimeoutMs: number | undefined;
}

export interface BudgetDefaults {
  default_max_steps: number;
  /** 0 = no limit. */
  max_tokens_per_batch: number;
  max_batch_seconds: number;
}

type Layer = Partial<BudgetFields> & { max_steps?: number | null };

export function resolveBudgets(
  request: Layer,
  agent: Layer,
  defaults: BudgetDefaults,
): BatchBudgets {
  const pick = <K extends keyof Layer>(k: K) => request[k] ?? agent[k] ?? null;
  const tokens = pick('max_tokens_per_batch') ?? (defaults.max_tokens_per_batch || null);
  const timeout = pick('model_call_timeout_seconds');
  return {
    maxSteps: pick('max_steps') ?? defaults.default_max_steps,
    maxTokens: tokens,
    maxBatchMs: (pick('max_batch_seconds') ?? defaults.max_batch_seconds) * 1000,
    modelCallTimeoutMs: timeout === null ? undefined : timeout * 1000,
  };
}

/** What a batch has spent so far (earlier runs of a resumed batch included, except wall time). */
export interface BudgetSpent {
  steps: number;
  tokens: number;
  elapsedMs: number;
}

/**
 * Checked before each model call: the budget that is used up, if any. A call is not started once the
 * batch's tokens reached the budget (a call's cost is only known after it).
 */
export function exhaustedBudget(
  b: BatchBudgets,
  spent: BudgetSpent,
): { reason: StopReason; detail: string | null } | null {
  if (spent.steps >= b.maxSteps) return { reason: 'max_steps', detail: null };
  if (b.maxTokens !== null && spent.tokens >= b.maxTokens)
    return {
      reason: 'max_tokens_exceeded',
      detail: `token budget of ${b.maxTokens} per batch reached (${spent.tokens} used)`,
    };
  if (spent.elapsedMs >= b.maxBatchMs)
    return {
      reason: 'max_wall_time',
      detail: `wall time budget of ${b.maxBatchMs / 1000} s per batch reached`,
    };
  return null;
}
