import type { EmbeddingCatalog } from '../../models/embeddings/embedding-catalog';
import type { LlmConfig, ScriptedTurn } from '../../models/model-provider';
import type { ProviderCatalog } from '../../models/providers/provider-catalog';
import { NO_BUDGETS, parseBudgets } from '../loop/budgets';
import { countProblem, type InputLimits } from '../limits';
import { ValidationProblem, validateToolRules } from '../rules/validate-tool-rules';
import { AgentRecord, AgentToolExecutorSettings, MemoryBlock } from './agent-record';
import { baseToolRules } from './base-tool-rules';
import {
  AGENT_TYPES,
  AgentType,
  BASE_TOOLS_BY_TYPE,
  defaultSystemPrompt,
  isAgentType,
} from './agent-type';
import { DEFAULT_TIMEZONE, timeZoneProblem } from './timezone';
import { parseNewBlock } from './validate-block';

/** The editable part of an agent, after validation. `tool_executor` holds only the agent's overrides. */
export type AgentDraft = Omit<
  AgentRecord,
  | 'id'
  | 'tenant_id'
  | 'model'
  | 'tool_executor'
  | 'last_stop_reason'
  | 'last_run_completion'
  | 'last_run_duration_ms'
  | 'source'
  | 'created_at'
  | 'updated_at'
> & { tool_executor: Partial<AgentToolExecutorSettings> };

export interface AgentValidationContext {
  /** Names of every tool the tenant may attach (built-ins and declared). */
  availableTools: ReadonlySet<string>;
  /** The operator's model providers: handles and endpoints resolve against them only. */
  models: Pick<ProviderCatalog, 'fromHandle' | 'resolve'>;
  /** The operator's embedding models: Letta's `embedding` / `embedding_config` resolve against them. */
  embeddings: Pick<EmbeddingCatalog, 'choose'>;
  newBlockId: () => string;
  /** Used when create gives no name (Letta's: an adjective and a noun, `SincereYogurt`). */
  newName: () => string;
  limits: InputLimits;
  /** The operator's `agents.default_agent_type`: the type of an agent created without one. */
  defaultAgentType: AgentType;
}

const MAX_NAME = 200;
/** Letta's bounds of its file settings (`MAX_FILES_OPEN_LIMIT`, the int32 its column holds). */
const MAX_FILES_OPEN_LIMIT = 1000;
const MAX_INT32 = 2_147_483_647;
/** A client tool's name (Letta's client_tools, on the agent or a request). */
export const CLIENT_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Obj, k: string) => Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined;
/** Letta clients send null for "not given" on list fields and the name. */
const given = (o: Obj, k: string) => has(o, k) && o[k] !== null;

/** Field names in llm_config that would carry a secret: keys come from configuration only. */
const SECRET_FIELD = /^(api[_-]?key|.*_api_key|secret|.*_secret|access_token|password)$/i;

export const modelHandle = (c: LlmConfig) =>
  `${typeof c.provider_name === 'string' ? c.provider_name : c.model_endpoint_type}/${c.model}`;

/**
 * Validates a create (no `current`) or a partial update (`current` given) and returns the whole
 * resulting draft. Fields Letta sends that we do not use are ignored; every problem carries its path.
 */
export function validateAgentInput(
  input: unknown,
  ctx: AgentValidationContext,
  current?: AgentDraft,
): { draft: AgentDraft | null; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const bad = (path: string, message: string, limit?: string) =>
    problems.push({ path, message, ...(limit ? { limit } : {}) });
  if (!isObj(input))
    return { draft: null, problems: [{ path: '(body)', message: 'must be a JSON object' }] };

  const str = (key: string, opts: { nonEmpty?: boolean; max?: number } = {}) => {
    const v = input[key];
    if (typeof v !== 'string') return void bad(key, 'must be a string');
    if (opts.nonEmpty && v.trim() === '') return void bad(key, 'must not be empty');
    if (opts.max && v.length > opts.max)
      return void bad(key, `must be at most ${opts.max} characters`);
    return v;
  };
  const strList = (key: string, bound: keyof InputLimits): string[] | undefined => {
    const v = input[key];
    if (!Array.isArray(v)) return void bad(key, 'must be a list of strings');
    const tooMany = countProblem(key, v.length, bound, ctx.limits);
    if (tooMany) return void problems.push(tooMany);
    v.forEach((s, i) => {
      if (typeof s !== 'string') bad(`${key}[${i}]`, 'must be a string');
      else if (s.length > MAX_NAME) bad(`${key}[${i}]`, `must be at most ${MAX_NAME} characters`);
    });
    return [...new Set(v.filter((s): s is string => typeof s === 'string'))];
  };

  // Letta's UpdateAgent has no agent_type: it is chosen on create only (a file agent is re-created from its file)
  let agent_type = current?.agent_type ?? ctx.defaultAgentType;
  if (given(input, 'agent_type')) {
    const t = input.agent_type;
    if (!isAgentType(t))
      bad(
        'agent_type',
        `must be one of ${AGENT_TYPES.join(', ')} (Letta's other types need sleep-time or voice agents, which this server does not have)`,
      );
    else if (current && t !== current.agent_type)
      bad(
        'agent_type',
        `cannot be changed once the agent is created (it is ${current.agent_type})`,
      );
    else agent_type = t;
  }

  const name = given(input, 'name')
    ? str('name', { nonEmpty: true, max: MAX_NAME })
    : (current?.name ?? ctx.newName());
  // null is Letta's "not given" (its update skips None fields): the default prompt, or the current one
  const system = given(input, 'system')
    ? str('system')
    : (current?.system ?? defaultSystemPrompt(agent_type));
  // as Letta's update (it sets only the fields given not null), null keeps the description and metadata
  const description = given(input, 'description')
    ? str('description')
    : (current?.description ?? null);

  // tools: on create the base tools are added unless include_base_tools is false; an update replaces the list.
  let tools = current?.tools ?? [];
  if (given(input, 'tools')) {
    const list = strList('tools', 'max_tools_per_agent') ?? [];
    list.forEach((t, i) => {
      if (!ctx.availableTools.has(t)) bad(`tools[${i}]`, `unknown tool ${JSON.stringify(t)}`);
    });
    tools = list;
  }
  if (!current) {
    const includeBase = input.include_base_tools;
    if (includeBase !== undefined && includeBase !== null && typeof includeBase !== 'boolean')
      bad('include_base_tools', 'must be true or false');
    if (includeBase !== false) tools = [...new Set([...BASE_TOOLS_BY_TYPE[agent_type], ...tools])];
  }
  const tooManyTools = countProblem('tools', tools.length, 'max_tools_per_agent', ctx.limits);
  if (tooManyTools) problems.push(tooManyTools);

  let client_tools = current?.client_tools ?? [];
  if (has(input, 'client_tools')) {
    const list = input.client_tools === null ? [] : strList('client_tools', 'max_tools_per_agent');
    if (list) {
      list.forEach((n, i) => {
        if (!CLIENT_TOOL_NAME.test(n))
          bad(`client_tools[${i}]`, 'must be a tool name: letters, digits, _ or -, at most 64');
        else if (tools.includes(n))
          bad(`client_tools[${i}]`, `${n} is one of the agent's own tools`);
      });
      client_tools = [...new Set(list)];
    }
  }

  // as Letta's update, null leaves the rules as they are (an empty list removes them)
  const rulesInput = given(input, 'tool_rules') ? input.tool_rules : (current?.tool_rules ?? []);
  // rules may name the agent's tools and the client tools it declares
  const { rules: tool_rules, problems: ruleProblems } = validateToolRules(
    rulesInput,
    [...tools, ...client_tools],
    ctx.limits,
  );
  problems.push(...ruleProblems);

  const blockCount = Array.isArray(input.memory_blocks) ? input.memory_blocks.length : 0;
  const tooManyBlocks = countProblem(
    'memory_blocks',
    blockCount,
    'max_memory_blocks_per_agent',
    ctx.limits,
  );
  if (tooManyBlocks) problems.push(tooManyBlocks);
  const blocks =
    given(input, 'memory_blocks') && !tooManyBlocks
      ? validateBlocks(input.memory_blocks, current?.blocks ?? [], ctx, bad)
      : (current?.blocks ?? []);

  const llm_config = resolveLlmConfig(input, ctx, current?.llm_config, bad);

  // create: Letta's base tool rules follow the agent's own (an update keeps the rules it is given)
  if (!current) {
    const flag = input.include_base_tool_rules;
    if (flag !== undefined && flag !== null && typeof flag !== 'boolean')
      bad('include_base_tool_rules', 'must be true or false');
    else if (llm_config) {
      const request = {
        agent_type,
        include_base_tools: input.include_base_tools as boolean | null | undefined,
        include_base_tool_rules: flag,
        hasToolRules: Array.isArray(rulesInput) && rulesInput.length > 0,
        model: llm_config.model,
      };
      // a tool whose loop the request's own rules decide (exit_loop / continue_loop) keeps that choice
      const looped = new Set(
        tool_rules.flatMap((r) =>
          r.type === 'exit_loop' || r.type === 'continue_loop' ? [r.tool_name] : [],
        ),
      );
      for (const rule of baseToolRules(request, tools))
        if (!('tool_name' in rule && looped.has(rule.tool_name))) tool_rules.push(rule);
      const tooManyRules = countProblem(
        'tool_rules',
        tool_rules.length,
        'max_rules_per_agent',
        ctx.limits,
      );
      if (tooManyRules)
        problems.push({
          ...tooManyRules,
          message: `${tooManyRules.message}, with Letta's base tool rules (include_base_tool_rules: false adds none)`,
        });
    }
  }

  // create: the one asked for or the operator's default; update: changed only when one is given
  let embedding_config = current?.embedding_config ?? null;
  if (!current || given(input, 'embedding') || given(input, 'embedding_config')) {
    const chosen = ctx.embeddings.choose(input);
    if ('error' in chosen) bad(chosen.path, chosen.error);
    else if (chosen.ok || !current) embedding_config = chosen.ok;
  }

  const tags = given(input, 'tags')
    ? (strList('tags', 'max_tags_per_agent') ?? [])
    : (current?.tags ?? []);
  let metadata = current?.metadata ?? null;
  if (given(input, 'metadata')) {
    if (isObj(input.metadata)) metadata = input.metadata;
    else bad('metadata', 'must be an object or null');
  }

  let tool_executor = current?.tool_executor ?? {};
  if (has(input, 'tool_executor')) {
    tool_executor = validateExecutorSettings(input.tool_executor, bad) ?? tool_executor;
  }

  let model_script = current?.model_script ?? null;
  if (has(input, 'model_script'))
    model_script = validateModelScript(input.model_script, ctx.limits, bad);

  let max_steps = current?.max_steps ?? null;
  if (has(input, 'max_steps')) {
    const v = input.max_steps;
    if (v === null) max_steps = null;
    else if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 10000)
      bad('max_steps', 'must be a whole number from 1 to 10000, or null');
    else max_steps = v;
  }

  // like tool_executor, a given object replaces the agent's budgets; null clears them
  let budgets = current?.budgets ?? NO_BUDGETS;
  if (has(input, 'budgets')) budgets = parseBudgets(input.budgets, 'budgets', bad) ?? budgets;

  // create: Letta's default; update: null or absent keeps the agent's (Letta updates only given fields)
  let timezone = current?.timezone ?? DEFAULT_TIMEZONE;
  if (given(input, 'timezone')) {
    const problem = timeZoneProblem(input.timezone);
    if (problem) bad('timezone', problem);
    else timezone = input.timezone as string;
  }

  // Letta's hidden and file settings: kept (an update changes what it gives; null keeps, as Letta's)
  let hidden = current?.hidden ?? null;
  if (given(input, 'hidden')) {
    if (typeof input.hidden !== 'boolean') bad('hidden', 'must be true or false');
    else hidden = input.hidden;
  }
  const count = (key: 'max_files_open' | 'per_file_view_window_char_limit', max: number) => {
    if (!given(input, key)) return current?.[key] ?? null;
    const v = input[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max)
      return void bad(key, `must be a whole number from 1 to ${max}`);
    return v;
  };
  const max_files_open = count('max_files_open', MAX_FILES_OPEN_LIMIT);
  const per_file_view_window_char_limit = count('per_file_view_window_char_limit', MAX_INT32);

  // Letta's message_buffer_autoclear (each request starts from the system prompt alone) is not done
  // here: asked for, it is refused rather than silently ignored (the agent would remember)
  if (input.message_buffer_autoclear === true)
    bad(
      'message_buffer_autoclear',
      'is not supported: every agent keeps its history in context (reset it with PATCH /v1/agents/{id}/reset-messages)',
    );
  else if (has(input, 'message_buffer_autoclear') && input.message_buffer_autoclear !== null)
    if (input.message_buffer_autoclear !== false)
      bad('message_buffer_autoclear', 'must be true or false');

  if (
    problems.length ||
    max_files_open === undefined ||
    per_file_view_window_char_limit === undefined ||
    name === undefined ||
    system === undefined ||
    description === undefined ||
    !llm_config
  )
    return { draft: null, problems };
  return {
    draft: {
      name,
      system: system ?? '',
      description,
      agent_type,
      tools,
      tool_rules,
      blocks,
      llm_config,
      tags,
      metadata,
      tool_executor,
      model_script,
      max_steps,
      budgets,
      client_tools,
      embedding_config,
      timezone,
      hidden,
      max_files_open,
      per_file_view_window_char_limit,
    },
    problems,
  };
}

function validateBlocks(
  input: unknown,
  current: MemoryBlock[],
  ctx: AgentValidationContext,
  bad: (path: string, message: string, limit?: string) => void,
): MemoryBlock[] {
  if (!Array.isArray(input)) {
    bad('memory_blocks', 'must be a list of blocks');
    return [];
  }

  const labels = new Set<string>();
  const out: MemoryBlock[] = [];
  input.forEach((b: unknown, i) => {
    const at = `memory_blocks[${i}]`;
    const block = parseNewBlock(b, at, ctx.limits, bad);
    if (!block) return;
    if (labels.has(block.label))
      return bad(`${at}.label`, `duplicate label ${JSON.stringify(block.label)}`);
    labels.add(block.label);
    const same = current.find((c) => c.label === block.label);
    // a block kept by label keeps its id (other agents may share it) and its metadata
    out.push({
      ...block,
      id: same?.id ?? ctx.newBlockId(),
      metadata: block.metadata ?? same?.metadata ?? null,
    });
  });
  return out;
}

function resolveLlmConfig(
  input: Obj,
  ctx: AgentValidationContext,
  current: LlmConfig | undefined,
  bad: (path: string, message: string) => void,
): LlmConfig | null {
  let base: LlmConfig | null = current ?? null;
  if (has(input, 'model') && input.model !== null) {
    if (typeof input.model !== 'string') {
      bad('model', 'must be a string handle like "openai/gpt-4o-mini"');
      return null;
    }
    const r = ctx.models.fromHandle(input.model);
    if ('error' in r) {
      bad(r.path, r.error);
      return null;
    }
    base = r.ok;
  }
  if (has(input, 'llm_config') && input.llm_config !== null) {
    const given = input.llm_config;
    if (!isObj(given)) {
      bad('llm_config', 'must be an object');
      return null;
    }
    let ok = true;
    for (const k of Object.keys(given)) {
      if (SECRET_FIELD.test(k)) {
        ok = false;
        bad(
          `llm_config.${k}`,
          'is not accepted: model API keys come from the server configuration or environment only',
        );
      }
    }
    const typed: [string, 'string' | 'number', boolean][] = [
      ['model', 'string', false],
      ['model_endpoint_type', 'string', false],
      ['model_endpoint', 'string', true],
      ['provider_name', 'string', true],
      ['context_window', 'number', false],
      ['max_tokens', 'number', true],
      ['temperature', 'number', false],
    ];
    for (const [k, type, nullable] of typed) {
      const v = given[k];
      if (v === undefined || (v === null && nullable)) continue;
      const range = typeof v === 'number' ? LLM_NUMBER_RANGES[k] : undefined;
      if (typeof v !== type) {
        ok = false;
        bad(`llm_config.${k}`, `must be a ${type}${nullable ? ' or null' : ''}`);
      } else if (range && !inRange(v as number, range)) {
        // the same bounds as context_window_limit and model_settings: 1e308 or -7 reached the model call
        ok = false;
        bad(`llm_config.${k}`, range.message);
      }
    }
    if (!ok) return null;
    // The model handle (or the current config) is the base; explicit llm_config fields win. Naming
    // a type or an endpoint without a provider picks the provider anew; the provider sets the endpoint.
    const fresh = { ...(base ?? {}) } as Partial<LlmConfig>;
    if (
      !has(given, 'provider_name') &&
      (has(given, 'model_endpoint_type') || has(given, 'model_endpoint'))
    )
      delete fresh.provider_name;
    if (!has(given, 'model_endpoint')) delete fresh.model_endpoint;
    const merged = { ...fresh, ...given } as LlmConfig;
    for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
    base = merged;
  }
  // Neither given: the offline scripted model, so a first run works without any key.
  if (!base) {
    const r = ctx.models.fromHandle('scripted/default');
    base = 'ok' in r ? r.ok : null;
  }
  if (!base || typeof base.model !== 'string' || base.model === '') {
    bad('llm_config.model', 'is required');
    return null;
  }
  const pinned = ctx.models.resolve(base);
  if ('error' in pinned) {
    bad(pinned.path, pinned.error);
    return null;
  }
  return applyModelSettings(input, pinned.ok, bad);
}

const CONTEXT_WINDOW_MAX = 10_000_000;

interface NumberRange {
  min: number;
  max: number;
  integer: boolean;
  message: string;
}
const inRange = (v: number, r: NumberRange) =>
  (r.integer ? Number.isInteger(v) : Number.isFinite(v)) && v >= r.min && v <= r.max;
/** llm_config's numbers, bounded as their model_settings / context_window_limit counterparts are. */
const LLM_NUMBER_RANGES: Record<string, NumberRange> = {
  context_window: {
    min: 1,
    max: CONTEXT_WINDOW_MAX,
    integer: true,
    message: `must be a whole number from 1 to ${CONTEXT_WINDOW_MAX}`,
  },
  max_tokens: {
    min: 1,
    max: CONTEXT_WINDOW_MAX,
    integer: true,
    message: `must be a whole number from 1 to ${CONTEXT_WINDOW_MAX}, or null`,
  },
  temperature: { min: 0, max: 2, integer: false, message: 'must be a number from 0 to 2' },
};
/** Letta's model_settings keys this server applies (or, for parallel calls and the provider type, accepts). */
const MODEL_SETTINGS = ['temperature', 'max_output_tokens', 'parallel_tool_calls', 'provider_type'];

/**
 * Letta 1.x's `context_window_limit` and `model_settings` over the llm_config: honoured, and anything this
 * server cannot honour is a 400 naming it rather than silently ignored.
 */
function applyModelSettings(
  input: Obj,
  llm: LlmConfig,
  bad: (path: string, message: string) => void,
): LlmConfig {
  const out = { ...llm };
  const limit = input.context_window_limit;
  const { context_window: window, max_tokens: tokens, temperature } = LLM_NUMBER_RANGES;
  if (limit !== undefined && limit !== null) {
    if (typeof limit !== 'number' || !inRange(limit, window))
      bad('context_window_limit', window.message);
    else out.context_window = limit;
  }
  const ms = input.model_settings;
  if (ms === undefined || ms === null) return out;
  if (!isObj(ms)) {
    bad('model_settings', 'must be an object');
    return out;
  }
  for (const k of Object.keys(ms)) {
    if (!MODEL_SETTINGS.includes(k))
      bad(`model_settings.${k}`, `is not supported; supported: ${MODEL_SETTINGS.join(', ')}`);
  }
  if (ms.temperature !== undefined) {
    if (typeof ms.temperature !== 'number' || !inRange(ms.temperature, temperature))
      bad('model_settings.temperature', temperature.message);
    else out.temperature = ms.temperature;
  }
  if (ms.max_output_tokens !== undefined) {
    const n = ms.max_output_tokens;
    if (typeof n !== 'number' || !inRange(n, tokens))
      bad('model_settings.max_output_tokens', tokens.message);
    else out.max_tokens = n;
  }
  if (ms.parallel_tool_calls !== undefined && typeof ms.parallel_tool_calls !== 'boolean')
    bad('model_settings.parallel_tool_calls', 'must be true or false');
  return out;
}

const EXECUTOR_FIELDS: (keyof AgentToolExecutorSettings)[] = [
  'tool_timeout_seconds',
  'consent_timeout_seconds',
  'dedupe_window_seconds',
];

function validateExecutorSettings(
  input: unknown,
  bad: (path: string, message: string) => void,
): Partial<AgentToolExecutorSettings> | null {
  if (input === null) return {};
  if (!isObj(input)) {
    bad('tool_executor', 'must be an object');
    return null;
  }
  const out: Partial<AgentToolExecutorSettings> = {};
  for (const k of Object.keys(input)) {
    if (!EXECUTOR_FIELDS.includes(k as keyof AgentToolExecutorSettings))
      bad(`tool_executor.${k}`, `unknown setting; expected one of ${EXECUTOR_FIELDS.join(', ')}`);
  }
  for (const k of EXECUTOR_FIELDS) {
    const v = input[k];
    if (v === undefined || v === null) continue;
    // A dedupe window of 0 turns default dedupe off; timeouts must be positive.
    const min = k === 'dedupe_window_seconds' ? 0 : 1;
    // a tool's timeout is a timer (a day at most); the others are windows (a year)
    const max = k === 'tool_timeout_seconds' ? 86_400 : 31_536_000;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      bad(`tool_executor.${k}`, `must be a whole number of seconds from ${min} to ${max}`);
    else out[k] = v;
  }
  return out;
}

function validateModelScript(
  input: unknown,
  limits: Pick<InputLimits, 'max_tool_calls_per_step'>,
  bad: (path: string, message: string, limit?: string) => void,
): ScriptedTurn[] | null {
  if (input === null) return null;
  if (!Array.isArray(input)) {
    bad('model_script', 'must be a list of turns');
    return null;
  }
  const out: ScriptedTurn[] = [];
  input.forEach((t: unknown, i) => {
    const at = `model_script[${i}]`;
    if (!isObj(t)) return bad(at, 'must be an object {content?, reasoning?, tool_calls?}');
    const turn: ScriptedTurn = {};
    for (const k of ['content', 'reasoning'] as const) {
      if (t[k] === undefined || t[k] === null) continue;
      if (typeof t[k] !== 'string') bad(`${at}.${k}`, 'must be a string');
      else turn[k] = t[k];
    }
    if (t.tool_calls !== undefined && t.tool_calls !== null) {
      const tooMany =
        Array.isArray(t.tool_calls) &&
        countProblem(`${at}.tool_calls`, t.tool_calls.length, 'max_tool_calls_per_step', limits);
      if (!Array.isArray(t.tool_calls)) bad(`${at}.tool_calls`, 'must be a list');
      else if (tooMany) bad(tooMany.path, tooMany.message, tooMany.limit);
      else {
        turn.tool_calls = [];
        t.tool_calls.forEach((c: unknown, j) => {
          const cp = `${at}.tool_calls[${j}]`;
          if (!isObj(c)) return bad(cp, 'must be an object {name, arguments}');
          if (typeof c.name !== 'string' || c.name === '')
            return bad(`${cp}.name`, 'is required (a tool name)');
          const args = c.arguments ?? {};
          if (!isObj(args)) return bad(`${cp}.arguments`, 'must be an object');
          turn.tool_calls!.push({ name: c.name, arguments: args });
        });
      }
    }
    out.push(turn);
  });
  return out;
}

/** Resolves an agent's executor overrides against the configured defaults. */
export function resolveExecutorSettings(
  overrides: Partial<AgentToolExecutorSettings>,
  defaults: AgentToolExecutorSettings,
): AgentToolExecutorSettings {
  return {
    tool_timeout_seconds: overrides.tool_timeout_seconds ?? defaults.tool_timeout_seconds,
    consent_timeout_seconds: overrides.consent_timeout_seconds ?? defaults.consent_timeout_seconds,
    dedupe_window_seconds: overrides.dedupe_window_seconds ?? defaults.dedupe_window_seconds,
  };
}
