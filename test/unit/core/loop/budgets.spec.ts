import {
  BatchBudgets,
  BudgetSpent,
  exhaustedBudget,
  resolveBudgets,
} from '../../../../src/core/loop/budgets';

const DEFAULTS = { default_max_steps: 50, max_tokens_per_batch: 0, max_batch_seconds: 600 };

describe('resolveBudgets: request, else agent, else config', () => {
  const rows: [string, object, object, Partial<typeof DEFAULTS>, Partial<BatchBudgets>][] = [
    [
      'nothing set: the config (a 0 token budget is none)',
      {},
      {},
      {},
      { maxSteps: 50, maxTokens: null, maxBatchMs: 600_000, modelCallTimeoutMs: undefined },
    ],
    ['config token budget', {}, {}, { max_tokens_per_batch: 300 }, { maxTokens: 300 }],
    [
      'the agent over the config',
      {},
      { max_steps: 5, max_tokens_per_batch: 200, max_batch_seconds: 30 },
      { max_tokens_per_batch: 300 },
      { maxSteps: 5, maxTokens: 200, maxBatchMs: 30_000 },
    ],
    [
      'the request over the agent',
      { max_steps: 9, max_tokens_per_batch: 1000, model_call_timeout_seconds: 7 },
      { max_steps: 5, max_tokens_per_batch: 200, model_call_timeout_seconds: 60 },
      {},
      { maxSteps: 9, maxTokens: 1000, modelCallTimeoutMs: 7000 },
    ],
    [
      'null in the request falls through to the agent',
      { max_steps: null, max_batch_seconds: null },
      { max_steps: 5, max_batch_seconds: 20 },
      {},
      { maxSteps: 5, maxBatchMs: 20_000 },
    ],
  ];
  it.each(rows)('%s', (_n, request, agent, config, expected) => {
    expect(resolveBudgets(request, agent, { ...DEFAULTS, ...config })).toMatchObject(expected);
  });
});

describe('exhaustedBudget: checked before each model call', () => {
  const b: BatchBudgets = {
    maxSteps: 3,
    maxTokens: 500,
    maxBatchMs: 10_000,
    modelCallTimeoutMs: undefined,
  };
  const rows: [string, Partial<BatchBudgets>, BudgetSpent, string | null][] = [
    ['within every budget', {}, { steps: 2, tokens: 499, elapsedMs: 9_999 }, null],
    ['steps used up', {}, { steps: 3, tokens: 0, elapsedMs: 0 }, 'max_steps'],
    ['tokens reached', {}, { steps: 1, tokens: 500, elapsedMs: 0 }, 'max_tokens_exceeded'],
    ['no token budget', { maxTokens: null }, { steps: 1, tokens: 10 ** 9, elapsedMs: 0 }, null],
    ['wall time reached', {}, { steps: 1, tokens: 0, elapsedMs: 10_000 }, 'max_wall_time'],
    [
      'steps win over tokens and time',
      {},
      { steps: 3, tokens: 900, elapsedMs: 20_000 },
      'max_steps',
    ],
  ];
  it.each(rows)('%s', (_n, over, spent, reason) => {
    expect(exhaustedBudget({ ...b, ...over }, spent)?.reason ?? null).toBe(reason);
  });

  it('says which budget and how much was used', () => {
    expect(exhaustedBudget(b, { steps: 1, tokens: 620, elapsedMs: 0 })?.detail).toBe(
      'token budget of 500 per batch reached (620 used)',
    );
  });
});
