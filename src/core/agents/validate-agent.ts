import type { LlmConfig, ScriptedTurn } from '../../models/model-provider';
import { NO_BUDGETS, parseBudgets } from '../loop/budgets';
import { ValidationProblem, validateToolRules } from '../rules/validate-tool-rules';
import {
  AgentRecord,
  AgentToolExecutorSettings,
  BASE_TOOL_NAMES,
  DEFAULT_BLOCK_LIMIT,
  MemoryBlock,
} from './agent-record';

/** The editable part of an agent, after validation. `tool_executor` holds only the agent's overrides. */
export type AgentDraft = Omit<
  AgentRecord,
  | 'id'
  | 'tenant_id'
  | 'model'
  | 'tool_executor'
  | 'last_stop_reason'
  | 'source'
  | 'created_at'
  | 'updated_at'
> & { tool_executor: Partial<AgentToolExecutorSettings> };

export interface AgentValidationContext {
  /** Names of every tool the tenant may attach (built-ins and declared). */
  availableTools: ReadonlySet<string>;
  openaiBaseUrl: string;
  newBlockId: () => string;
  /** Used when create gives no name. */
  newName: () => string;
}

export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful assistant. Use the tools you have; answer the user with send_message.';

export const SUPPORTED_PROVIDERS = ['openai', 'scripted'] as const;
const CONTEXT_WINDOW = 128000;
const MAX_NAME = 200;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Obj, k: string) => Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined;
/** Letta clients send null for "not given" on list fields and the name. */
const given = (o: Obj, k: string) => has(o, k) && o[k] !== null;

/** Field names in llm_config that would carry a secret: keys come from configuration only. */
const SECRET_FIELD = /^(api[_-]?key|.*_api_key|secret|.*_secret|access_token|password)$/i;

/** `openai/gpt-4o-mini` → llm_config; `scripted/<name>` → the offline scripted provider. */
export function llmConfigFromHandle(
  handle: string,
  openaiBaseUrl: string,
): { config: LlmConfig } | { error: string } {
  const m = /^([a-z0-9_.-]+)\/(.+)$/i.exec(handle);
  if (!m) return { error: 'must be a handle like "openai/gpt-4o-mini" or "scripted/default"' };
  const [, provider, model] = m;
  switch (provider) {
    case 'openai':
      return {
        config: {
          model,
          model_endpoint_type: 'openai',
          model_endpoint: openaiBaseUrl,
          context_window: CONTEXT_WINDOW,
        },
      };
    case 'scripted':
      return {
        config: {
          model,
          model_endpoint_type: 'scripted',
          model_endpoint: null,
          context_window: CONTEXT_WINDOW,
        },
      };
    default:
      return {
        error: `unsupported provider "${provider}"; expected one of ${SUPPORTED_PROVIDERS.join(', ')}`,
      };
  }
}

export const modelHandle = (c: LlmConfig) => `${c.model_endpoint_type}/${c.model}`;

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
  const bad = (path: string, message: string) => problems.push({ path, message });
  if (!isObj(input))
    return { draft: null, problems: [{ path: '(body)', message: 'must be a JSON object' }] };

  const str = (
    key: string,
    opts: { nullable?: boolean; nonEmpty?: boolean; max?: number } = {},
  ) => {
    const v = input[key];
    if (v === null && opts.nullable) return null;
    if (typeof v !== 'string') return void bad(key, 'must be a string');
    if (opts.nonEmpty && v.trim() === '') return void bad(key, 'must not be empty');
    if (opts.max && v.length > opts.max)
      return void bad(key, `must be at most ${opts.max} characters`);
    return v;
  };
  const strList = (key: string): string[] | undefined => {
    const v = input[key];
    if (!Array.isArray(v)) return void bad(key, 'must be a list of strings');
    v.forEach((s, i) => typeof s !== 'string' && bad(`${key}[${i}]`, 'must be a string'));
    return [...new Set(v.filter((s): s is string => typeof s === 'string'))];
  };

  const name = given(input, 'name')
    ? str('name', { nonEmpty: true, max: MAX_NAME })
    : (current?.name ?? ctx.newName());
  const system = has(input, 'system')
    ? str('system', { nullable: true })
    : (current?.system ?? DEFAULT_SYSTEM_PROMPT);
  const description = has(input, 'description')
    ? str('description', { nullable: true })
    : (current?.description ?? null);

  // tools: on create the base tools are added unless include_base_tools is false; an update replaces the list.
  let tools = current?.tools ?? [];
  if (given(input, 'tools')) {
    const list = strList('tools') ?? [];
    list.forEach((t, i) => {
      if (!ctx.availableTools.has(t)) bad(`tools[${i}]`, `unknown tool ${JSON.stringify(t)}`);
    });
    tools = list;
  }
  if (!current) {
    const includeBase = input.include_base_tools;
    if (includeBase !== undefined && includeBase !== null && typeof includeBase !== 'boolean')
      bad('include_base_tools', 'must be true or false');
    if (includeBase !== false) tools = [...new Set([...BASE_TOOL_NAMES, ...tools])];
  }

  const rulesInput = has(input, 'tool_rules') ? input.tool_rules : (current?.tool_rules ?? []);
  const { rules: tool_rules, problems: ruleProblems } = validateToolRules(rulesInput, tools);
  problems.push(...ruleProblems);

  const blocks = given(input, 'memory_blocks')
    ? validateBlocks(input.memory_blocks, current?.blocks ?? [], ctx, bad)
    : (current?.blocks ?? []);

  const llm_config = resolveLlmConfig(input, ctx, current?.llm_config, bad);

  const tags = given(input, 'tags') ? (strList('tags') ?? []) : (current?.tags ?? []);
  let metadata = current?.metadata ?? null;
  if (has(input, 'metadata')) {
    if (input.metadata === null || isObj(input.metadata)) metadata = input.metadata;
    else bad('metadata', 'must be an object or null');
  }

  let tool_executor = current?.tool_executor ?? {};
  if (has(input, 'tool_executor')) {
    tool_executor = validateExecutorSettings(input.tool_executor, bad) ?? tool_executor;
  }

  let model_script = current?.model_script ?? null;
  if (has(input, 'model_script')) model_script = validateModelScript(input.model_script, bad);

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

  if (
    problems.length ||
    name === undefined ||
    system === undefined ||
    description === undefined ||
    !llm_config
  )
    return { draft: null, problems };
  return {
    draft: {
      name: name as string,
      system: system ?? '',
      description,
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
    },
    problems,
  };
}

function validateBlocks(
  input: unknown,
  current: MemoryBlock[],
  ctx: AgentValidationContext,
  bad: (path: string, message: string) => void,
): MemoryBlock[] {
  if (!Array.isArray(input)) {
    bad('memory_blocks', 'must be a list of blocks');
    return [];
  }
  const labels = new Set<string>();
  const out: MemoryBlock[] = [];
  input.forEach((b: unknown, i) => {
    const at = `memory_blocks[${i}]`;
    if (!isObj(b)) return bad(at, 'must be an object');
    const label = b.label;
    const value = b.value ?? '';
    const limit = b.limit ?? DEFAULT_BLOCK_LIMIT;
    const description = b.description ?? null;
    const read_only = b.read_only ?? false;
    let ok = true;
    const fail = (field: string, message: string) => {
      ok = false;
      bad(`${at}.${field}`, message);
    };
    if (typeof label !== 'string' || label.trim() === '')
      fail('label', 'is required (a non-empty string)');
    else if (labels.has(label)) fail('label', `duplicate label ${JSON.stringify(label)}`);
    if (typeof value !== 'string') fail('value', 'must be a string');
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)
      fail('limit', 'must be a whole number, 1 or more');
    else if (typeof value === 'string' && value.length > limit)
      fail('value', `is ${value.length} characters, over the block's limit of ${limit}`);
    if (description !== null && typeof description !== 'string')
      fail('description', 'must be a string');
    if (typeof read_only !== 'boolean') fail('read_only', 'must be true or false');
    if (!ok) return;
    labels.add(label as string);
    out.push({
      id: current.find((c) => c.label === label)?.id ?? ctx.newBlockId(),
      label: label as string,
      value: value as string,
      limit: limit as number,
      description: description as string | null,
      read_only: read_only as boolean,
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
    const r = llmConfigFromHandle(input.model, ctx.openaiBaseUrl);
    if ('error' in r) {
      bad('model', r.error);
      return null;
    }
    base = r.config;
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
      ['context_window', 'number', false],
      ['max_tokens', 'number', true],
      ['temperature', 'number', false],
    ];
    for (const [k, type, nullable] of typed) {
      const v = given[k];
      if (v === undefined || (v === null && nullable)) continue;
      if (typeof v !== type) {
        ok = false;
        bad(`llm_config.${k}`, `must be a ${type}${nullable ? ' or null' : ''}`);
      }
    }
    if (!ok) return null;
    // The model handle (or the current config) is the base; explicit llm_config fields win.
    const merged = { ...(base ?? {}), ...given } as LlmConfig;
    for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
    base = merged;
  }
  // Neither given: the offline scripted model, so a first run works without any key.
  base ??= {
    model: 'default',
    model_endpoint_type: 'scripted',
    model_endpoint: null,
    context_window: CONTEXT_WINDOW,
  };
  if (typeof base.model !== 'string' || base.model === '') {
    bad('llm_config.model', 'is required');
    return null;
  }
  if (!(SUPPORTED_PROVIDERS as readonly string[]).includes(base.model_endpoint_type)) {
    bad(
      'llm_config.model_endpoint_type',
      `must be one of ${SUPPORTED_PROVIDERS.join(', ')}, got ${JSON.stringify(base.model_endpoint_type)}`,
    );
    return null;
  }
  return base;
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
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > 31_536_000)
      bad(`tool_executor.${k}`, `must be a whole number of seconds, ${min} or more`);
    else out[k] = v;
  }
  return out;
}

function validateModelScript(
  input: unknown,
  bad: (path: string, message: string) => void,
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
      if (!Array.isArray(t.tool_calls)) bad(`${at}.tool_calls`, 'must be a list');
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
