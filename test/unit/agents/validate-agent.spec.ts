import { parseListAgentsQuery } from '../../../src/core/agents/list-agents-query';
import { LIMITS } from '../../support/input-limits';
import {
  AgentDraft,
  AgentValidationContext,
  validateAgentInput,
} from '../../../src/core/agents/validate-agent';
import { loadConfig } from '../../../src/config/app-config';
import { ProviderCatalog } from '../../../src/models/providers/provider-catalog';
import { EmbeddingCatalog } from '../../../src/models/embeddings/embedding-catalog';

let n = 0;
const ctx: AgentValidationContext = {
  availableTools: new Set([
    'send_message',
    'core_memory_append',
    'core_memory_replace',
    'conversation_search',
    'memory_replace',
    'memory_insert',
    'issue_refund',
  ]),
  models: new ProviderCatalog(
    loadConfig({}, { models: { openai: { base_url: 'http://openai.test/v1' } } }).models,
  ),
  embeddings: new EmbeddingCatalog({ providers: [], default_model: null, max_scan_passages: 1 }),
  newBlockId: () => `block-${++n}`,
  defaultAgentType: 'memgpt_agent',
  newName: () => 'generated',
  limits: LIMITS,
};

describe('validateAgentInput: embedding', () => {
  const withEmbeddings: AgentValidationContext = {
    ...ctx,
    embeddings: new EmbeddingCatalog({
      providers: [
        {
          name: 'local',
          type: 'hashed',
          base_url: null,
          api_key: null,
          models: [
            { name: 'a', dimensions: 8 },
            { name: 'b', dimensions: 16 },
          ],
          batch_size: 64,
          timeout_seconds: 30,
          max_retries: 0,
          max_input_chars: 100,
          chunk_size: 300,
        },
      ],
      default_model: 'local/a',
      max_scan_passages: 10,
    }),
  };
  const handleOf = (input: Record<string, unknown>, c = withEmbeddings, current?: AgentDraft) =>
    validateAgentInput(input, c, current).draft?.embedding_config?.handle ?? null;

  it.each<[string, Record<string, unknown>, string | null]>([
    ['none given: the default', {}, 'local/a'],
    ['a handle', { embedding: 'local/b' }, 'local/b'],
    ['an embedding_config by handle', { embedding_config: { handle: 'local/b' } }, 'local/b'],
    [
      'an embedding_config by model name',
      { embedding_config: { embedding_model: 'b' } },
      'local/b',
    ],
  ])('create with %s', (_what, input, handle) => {
    expect(handleOf(input)).toBe(handle);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['an unknown handle', { embedding: 'openai/text-embedding-3-small' }, 'embedding'],
    [
      'other dimensions',
      { embedding_config: { handle: 'local/b', embedding_dim: 3 } },
      'embedding_config.embedding_dim',
    ],
    ['an unknown model', { embedding_config: { embedding_model: 'ada' } }, 'embedding_config'],
  ])('create with %s is refused at its path', (_what, input, path) => {
    expect(validateAgentInput(input, withEmbeddings).problems).toEqual([
      expect.objectContaining({ path }),
    ]);
  });

  it('with no embedding model configured, what a client sends is ignored (null), as before', () => {
    expect(handleOf({ embedding: 'openai/text-embedding-3-small' }, ctx)).toBeNull();
  });

  it('an update keeps the embedding unless one is given', () => {
    const current = validateAgentInput({ embedding: 'local/b' }, withEmbeddings).draft!;
    expect(handleOf({ name: 'renamed' }, withEmbeddings, current)).toBe('local/b');
    expect(handleOf({ embedding: 'local/a' }, withEmbeddings, current)).toBe('local/a');
  });
});

describe('validateAgentInput: create', () => {
  it('defaults: base tools with their base rules, scripted/default model, generated name', () => {
    const { draft, problems } = validateAgentInput({}, ctx);
    expect(problems).toEqual([]);
    expect(draft).toMatchObject({
      name: 'generated',
      tools: ['send_message', 'core_memory_append', 'core_memory_replace', 'conversation_search'],
      llm_config: { model: 'default', model_endpoint_type: 'scripted' },
      tool_rules: [
        { type: 'exit_loop', tool_name: 'send_message' },
        { type: 'continue_loop', tool_name: 'core_memory_append' },
        { type: 'continue_loop', tool_name: 'core_memory_replace' },
        { type: 'continue_loop', tool_name: 'conversation_search' },
      ],
      blocks: [],
      max_steps: null,
      budgets: {
        max_tokens_per_batch: null,
        max_batch_seconds: null,
        model_call_timeout_seconds: null,
      },
    });
  });

  it('resolves an openai handle and lets explicit llm_config fields win', () => {
    const { draft } = validateAgentInput(
      { model: 'openai/gpt-4o-mini', llm_config: { context_window: 8000, temperature: 0.2 } },
      ctx,
    );
    expect(draft?.llm_config).toEqual({
      model: 'gpt-4o-mini',
      model_endpoint_type: 'openai',
      model_endpoint: 'http://openai.test/v1',
      provider_name: 'openai',
      handle: 'openai/gpt-4o-mini',
      context_window: 8000,
      temperature: 0.2,
    });
  });

  it('include_base_tools: false keeps only the given tools', () => {
    const { draft } = validateAgentInput(
      { tools: ['issue_refund'], include_base_tools: false },
      ctx,
    );
    expect(draft?.tools).toEqual(['issue_refund']);
  });

  it('gives blocks ids and the default limit', () => {
    const { draft } = validateAgentInput(
      { memory_blocks: [{ label: 'human', value: 'Ann' }] },
      ctx,
    );
    expect(draft?.blocks[0]).toMatchObject({
      label: 'human',
      value: 'Ann',
      limit: 100000,
      read_only: false,
    });
    expect(draft?.blocks[0].id).toMatch(/^block-/);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ['body not an object', [] as unknown as Record<string, unknown>, '(body)'],
    ['empty name', { name: ' ' }, 'name'],
    ['unknown tool', { tools: ['ghost'] }, 'tools[0]'],
    [
      'rule on a tool the agent lacks',
      { tool_rules: [{ type: 'exit_loop', tool_name: 'issue_refund' }] },
      'tool_rules[0].tool_name',
    ],
    ['api_key in llm_config', { llm_config: { api_key: 'sk-x' } }, 'llm_config.api_key'],
    [
      'openai_api_key in llm_config',
      { llm_config: { openai_api_key: 'sk-x' } },
      'llm_config.openai_api_key',
    ],
    ['llm_config wrong type', { llm_config: 'gpt' }, 'llm_config'],
    [
      'context_window wrong type',
      { llm_config: { context_window: '8k' } },
      'llm_config.context_window',
    ],
    [
      'context_window 1e308',
      { llm_config: { context_window: 1e308 } },
      'llm_config.context_window',
    ],
    ['context_window 0', { llm_config: { context_window: 0 } }, 'llm_config.context_window'],
    [
      'context_window 8000.5',
      { llm_config: { context_window: 8000.5 } },
      'llm_config.context_window',
    ],
    ['max_tokens -7', { llm_config: { max_tokens: -7 } }, 'llm_config.max_tokens'],
    ['max_tokens 1e308', { llm_config: { max_tokens: 1e308 } }, 'llm_config.max_tokens'],
    ['temperature 3', { llm_config: { temperature: 3 } }, 'llm_config.temperature'],
    ['temperature -0.1', { llm_config: { temperature: -0.1 } }, 'llm_config.temperature'],
    ['unsupported provider', { model: 'anthropic/claude' }, 'model'],
    ['handle without provider', { model: 'gpt-4o' }, 'model'],
    [
      'value over limit',
      { memory_blocks: [{ label: 'h', value: 'abcdef', limit: 3 }] },
      'memory_blocks[0].value',
    ],
    ['block without label', { memory_blocks: [{ value: 'x' }] }, 'memory_blocks[0].label'],
    [
      'duplicate labels',
      { memory_blocks: [{ label: 'h' }, { label: 'h' }] },
      'memory_blocks[1].label',
    ],
    ['negative limit', { memory_blocks: [{ label: 'h', limit: -1 }] }, 'memory_blocks[0].limit'],
    ['tags not strings', { tags: [1] }, 'tags[0]'],
    ['metadata a list', { metadata: [] }, 'metadata'],
    [
      'timeout zero',
      { tool_executor: { tool_timeout_seconds: 0 } },
      'tool_executor.tool_timeout_seconds',
    ],
    [
      'dedupe negative',
      { tool_executor: { dedupe_window_seconds: -1 } },
      'tool_executor.dedupe_window_seconds',
    ],
    ['unknown executor setting', { tool_executor: { retries: 2 } }, 'tool_executor.retries'],
    ['script not a list', { model_script: {} }, 'model_script'],
    [
      'script call without name',
      { model_script: [{ tool_calls: [{ arguments: {} }] }] },
      'model_script[0].tool_calls[0].name',
    ],
    [
      'script args not an object',
      { model_script: [{ tool_calls: [{ name: 'x', arguments: '{}' }] }] },
      'model_script[0].tool_calls[0].arguments',
    ],
    ['script content not a string', { model_script: [{ content: 3 }] }, 'model_script[0].content'],
    ['a tag past 200 characters', { tags: ['ok', 'x'.repeat(201)] }, 'tags[1]'],
    ['max_steps zero', { max_steps: 0 }, 'max_steps'],
    ['max_steps fractional', { max_steps: 1.5 }, 'max_steps'],
    ['budgets not an object', { budgets: 5 }, 'budgets'],
    ['unknown budget', { budgets: { max_cost: 1 } }, 'budgets.max_cost'],
    ['token budget zero', { budgets: { max_tokens_per_batch: 0 } }, 'budgets.max_tokens_per_batch'],
    ['wall time fractional', { budgets: { max_batch_seconds: 1.5 } }, 'budgets.max_batch_seconds'],
    [
      'model call timeout too long',
      { budgets: { model_call_timeout_seconds: 3601 } },
      'budgets.model_call_timeout_seconds',
    ],
  ];
  it.each(bad)('%s → 400 at %s', (_n, input, path) => {
    const { draft, problems } = validateAgentInput(input, ctx);
    expect(draft).toBeNull();
    expect(problems.map((p) => p.path)).toContain(path);
  });

  const many = <T>(n: number, f: (i: number) => T): T[] =>
    Array.from({ length: n }, (_, i) => f(i));
  const overLimit: [string, Record<string, unknown>, string, string][] = [
    ['30,000 tags', { tags: many(30_000, (i) => `t${i}`) }, 'tags', 'max_tags_per_agent'],
    [
      "a block's 30,000 tags",
      { memory_blocks: [{ label: 'h', value: '', tags: many(30_000, (i) => `t${i}`) }] },
      'memory_blocks[0].tags',
      'max_tags_per_agent',
    ],
    [
      'a tools list longer than the bound',
      { tools: many(LIMITS.max_tools_per_agent + 1, () => 'issue_refund') },
      'tools',
      'max_tools_per_agent',
    ],
    [
      'more rules than the bound',
      { tool_rules: many(LIMITS.max_rules_per_agent + 1, () => ({ type: 'exit_loop' })) },
      'tool_rules',
      'max_rules_per_agent',
    ],
    [
      'more memory blocks than the bound',
      { memory_blocks: many(LIMITS.max_memory_blocks_per_agent + 1, (i) => ({ label: `b${i}` })) },
      'memory_blocks',
      'max_memory_blocks_per_agent',
    ],
  ];
  it.each(overLimit)('%s → a LIMIT problem at %s naming limits.%s', (_n, input, path, setting) => {
    const { draft, problems } = validateAgentInput(input, ctx);
    expect(draft).toBeNull();
    expect(problems).toContainEqual(expect.objectContaining({ path, limit: `limits.${setting}` }));
  });

  it('tools at the bound are fine; one more tool past the base tools is not', () => {
    const names = new Set<string>([...ctx.availableTools, ...many(200, (i) => `tool_${i}`)]);
    const wide = { ...ctx, availableTools: names };
    const n = LIMITS.max_tools_per_agent;
    const fits = validateAgentInput({ tools: [...names].slice(0, n) }, wide);
    expect(fits.problems).toEqual([]);
    const over = validateAgentInput({ tools: [...names].slice(0, n + 1) }, wide);
    expect(over.problems.map((p) => p.limit)).toEqual(['limits.max_tools_per_agent']);
  });

  it('a block limit past limits.max_block_chars → 400 at its limit', () => {
    const { problems } = validateAgentInput(
      { memory_blocks: [{ label: 'h', value: 'x', limit: LIMITS.max_block_chars + 1 }] },
      ctx,
    );
    expect(problems.map((p) => p.path)).toEqual(['memory_blocks[0].limit']);
  });

  it("a block without a limit under a smaller limits.max_block_chars gets that bound, not Letta's 100000", () => {
    const { draft, problems } = validateAgentInput(
      { memory_blocks: [{ label: 'h', value: 'x' }] },
      { ...ctx, limits: { ...LIMITS, max_block_chars: 2000 } },
    );
    expect(problems).toEqual([]);
    expect(draft?.blocks[0].limit).toBe(2000);
  });
});

describe('validateAgentInput: update', () => {
  const current = validateAgentInput(
    {
      name: 'a',
      tools: ['issue_refund'],
      tool_rules: [{ type: 'max_count_per_step', tool_name: 'issue_refund', max_count_limit: 3 }],
      memory_blocks: [{ label: 'human', value: 'x' }],
      model: 'openai/gpt-4o-mini',
    },
    ctx,
  ).draft!;

  it("budgets: a given object replaces the agent's; null clears them; absent keeps them", () => {
    const set = validateAgentInput({ budgets: { max_tokens_per_batch: 500 } }, ctx, current).draft!;
    expect(set.budgets).toEqual({
      max_tokens_per_batch: 500,
      max_batch_seconds: null,
      model_call_timeout_seconds: null,
    });
    const replaced = validateAgentInput({ budgets: { max_batch_seconds: 9 } }, ctx, set).draft!;
    expect(replaced.budgets).toEqual({ ...current.budgets, max_batch_seconds: 9 });
    expect(validateAgentInput({ name: 'b' }, ctx, replaced).draft!.budgets).toEqual(
      replaced.budgets,
    );
    expect(validateAgentInput({ budgets: null }, ctx, replaced).draft!.budgets).toEqual(
      current.budgets,
    );
  });

  it('is partial: untouched fields stay', () => {
    const { draft } = validateAgentInput({ description: 'new' }, ctx, current);
    expect(draft).toEqual({ ...current, description: 'new' });
  });

  it('replacing tools re-checks the existing rules', () => {
    const { problems } = validateAgentInput({ tools: ['send_message'] }, ctx, current);
    expect(problems.map((p) => p.path)).toContain('tool_rules[0].tool_name');
  });

  it('keeps block ids by label', () => {
    const { draft } = validateAgentInput(
      { memory_blocks: [{ label: 'human', value: 'y' }] },
      ctx,
      current,
    );
    expect(draft?.blocks[0].id).toBe(current.blocks[0].id);
  });

  it('llm_config alone merges over the current config', () => {
    const { draft } = validateAgentInput({ llm_config: { temperature: 0.5 } }, ctx, current);
    expect(draft?.llm_config).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.5 });
  });
});

describe('parseListAgentsQuery', () => {
  it.each([
    [{}, { limit: 50, order: 'desc', tags: [], matchAllTags: false }],
    [
      { limit: '2', after: 'agent-x', order: 'asc' },
      { limit: 2, after: 'agent-x', order: 'asc' },
    ],
    [
      { tags: ['a', 'b'], match_all_tags: 'true' },
      { tags: ['a', 'b'], matchAllTags: true },
    ],
    [{ 'tags[]': 'a' }, { tags: ['a'] }],
    [{ name: 'n' }, { name: 'n' }],
  ])('%j', (q, expected) => {
    const { query, problems } = parseListAgentsQuery(q, LIMITS);
    expect(problems).toEqual([]);
    expect(query).toMatchObject(expected);
  });

  it.each([
    [{ limit: '0' }, 'limit'],
    [{ limit: 'x' }, 'limit'],
    [{ order: 'up' }, 'order'],
    [{ match_all_tags: 'maybe' }, 'match_all_tags'],
    [{ tags: Array.from({ length: LIMITS.max_filter_values + 1 }, (_, i) => `t${i}`) }, 'tags'],
  ])('%j → problem at %s', (q, path) => {
    expect(parseListAgentsQuery(q, LIMITS).problems.map((p) => p.path)).toContain(path);
  });
});

describe('validateAgentInput: agent_type', () => {
  const tools = (input: Record<string, unknown>, c: AgentValidationContext = ctx) =>
    validateAgentInput({ name: 'a', ...input }, c).draft;

  it("an agent created without one gets the operator's default type, its base tools and prompt", () => {
    const v1 = tools({}, { ...ctx, defaultAgentType: 'letta_v1_agent' });
    expect(v1?.agent_type).toBe('letta_v1_agent');
    expect(v1?.tools).toEqual(['memory_replace', 'memory_insert', 'conversation_search']);
    expect(v1?.system).not.toContain('send_message');
    expect(tools({})?.agent_type).toBe('memgpt_agent');
    expect(tools({ agent_type: null })?.agent_type).toBe('memgpt_agent');
  });

  it('include_base_tools: false gives no base tools whatever the type', () => {
    expect(tools({ agent_type: 'memgpt_v2_agent', include_base_tools: false })?.tools).toEqual([]);
  });

  it('an update keeps the type; another one is a problem at agent_type', () => {
    const current = tools({ agent_type: 'react_agent' })!;
    expect(validateAgentInput({ tags: ['x'] }, ctx, current).draft?.agent_type).toBe('react_agent');
    expect(validateAgentInput({ agent_type: 'memgpt_agent' }, ctx, current).problems).toEqual([
      expect.objectContaining({ path: 'agent_type' }),
    ]);
  });
});

describe('validateAgentInput: timezone', () => {
  const create = (input: Record<string, unknown>) =>
    validateAgentInput({ name: 'a', ...input }, ctx);

  it("an agent created without one is in UTC (Letta's default); one given is kept as given", () => {
    expect(create({}).draft?.timezone).toBe('UTC');
    expect(create({ timezone: null }).draft?.timezone).toBe('UTC');
    expect(create({ timezone: 'America/New_York' }).draft?.timezone).toBe('America/New_York');
  });

  it('a name the time zone database does not know is a problem at timezone', () => {
    expect(create({ timezone: 'Mars/Olympus' }).problems).toEqual([
      expect.objectContaining({ path: 'timezone', message: expect.stringMatching(/IANA/) }),
    ]);
    expect(create({ timezone: '+02:00' }).problems).toEqual([
      expect.objectContaining({ path: 'timezone' }),
    ]);
  });

  it('an update changes it when one is given; null or absent keeps it, as Letta updates', () => {
    const current = create({ timezone: 'Europe/Berlin' }).draft!;
    expect(validateAgentInput({ tags: ['x'] }, ctx, current).draft?.timezone).toBe('Europe/Berlin');
    expect(validateAgentInput({ timezone: null }, ctx, current).draft?.timezone).toBe(
      'Europe/Berlin',
    );
    expect(validateAgentInput({ timezone: 'Asia/Tokyo' }, ctx, current).draft?.timezone).toBe(
      'Asia/Tokyo',
    );
  });
});
