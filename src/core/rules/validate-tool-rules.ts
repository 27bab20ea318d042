import stableStringify from 'json-stable-stringify';
import { countProblem, durationProblem, type InputLimits } from '../limits';
import type { ChildArgNode, DedupeMode, ToolRule, ToolRuleType } from './tool-rule';

/** A problem with one part of the input, named by its JSON path (`tool_rules[2].children`). */
export interface ValidationProblem {
  path: string;
  message: string;
  /** Set when a count passed a configured bound: the setting's name (`limits.max_tags_per_agent`). */
  limit?: string;
}

/** A stored rule may carry Letta's optional `prompt_template`; we keep it as sent. */
export type StoredToolRule = ToolRule & { prompt_template?: string };

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const DEDUPE_MODES: readonly DedupeMode[] = ['reject', 'return_cached', 'off'];

/** Field kinds a rule type may have; `?` marks optional ones. */
type FieldKind =
  | 'tool'
  | 'tool|*'
  | 'pattern'
  | 'tools'
  | 'count'
  | 'seconds'
  | 'seconds|0'
  | 'mapping'
  | 'child?'
  | 'bool?'
  | 'string?'
  | 'object?'
  | 'argNodes?'
  | 'mode';

/** `tool_name: "*"`: the rule applies to each of the agent's tools (max calls and dedupe only). */
export const EVERY_TOOL = '*';

/**
 * A consent rule's `tool_name`: a tool name, or a pattern where `*` stands for any characters
 * (`delete_*`). It may name tools the agent does not have (yet): it guards them once attached, so
 * detaching and re-attaching a tool never loses its consent rule.
 */
const CONSENT_NAME = /^[A-Za-z0-9_*-]{1,64}$/;

/** The fields each rule type takes, and their kinds: one table is the whole schema. */
const RULE_FIELDS: Record<ToolRuleType, Record<string, FieldKind>> = {
  run_first: { tool_name: 'tool', args: 'object?' },
  start_constraint: { tool_name: 'tool', args: 'object?' },
  exit_loop: { tool_name: 'tool' },
  continue_loop: { tool_name: 'tool' },
  constrain_child_tools: { tool_name: 'tool', children: 'tools', child_arg_nodes: 'argNodes?' },
  parent_last_tool: { tool_name: 'tool', children: 'tools' },
  conditional: {
    tool_name: 'tool',
    child_output_mapping: 'mapping',
    default_child: 'child?',
    require_output_mapping: 'bool?',
  },
  max_count_per_step: { tool_name: 'tool|*', max_count_limit: 'count' },
  max_calls: { tool_name: 'tool|*', max_count_limit: 'count' },
  required_before_exit: { tool_name: 'tool' },
  requires_preceding_tools: { tool_name: 'tool', tools: 'tools' },
  requires_following_tools: { tool_name: 'tool', tools: 'tools' },
  exclusive_group: { tools: 'tools', group: 'string?' },
  cooldown: { tool_name: 'tool', seconds: 'seconds' },
  // a window of 0 turns dedupe off for the tool, as `tool_executor.dedupe_window_seconds: 0` does
  dedupe: { tool_name: 'tool|*', window_seconds: 'seconds|0', mode: 'mode' },
  requires_consent: { tool_name: 'pattern', scope: 'string?' },
  requires_approval: { tool_name: 'pattern', scope: 'string?' },
};

export const TOOL_RULE_TYPES = Object.keys(RULE_FIELDS) as ToolRuleType[];

const KIND_SCHEMA: Record<FieldKind, Obj> = {
  tool: { type: 'string', minLength: 1 },
  'tool|*': { type: 'string', minLength: 1 },
  pattern: { type: 'string', pattern: CONSENT_NAME.source },
  tools: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
  count: { type: 'integer', minimum: 0 },
  seconds: { type: 'integer', minimum: 1 },
  'seconds|0': { type: 'integer', minimum: 0 },
  mapping: { type: 'object', minProperties: 1, additionalProperties: { type: 'string' } },
  'child?': { type: ['string', 'null'] },
  'bool?': { type: ['boolean', 'null'] },
  'string?': { type: ['string', 'null'] },
  'object?': { type: ['object', 'null'] },
  'argNodes?': {
    type: ['array', 'null'],
    items: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1 }, args: { type: ['object', 'null'] } },
    },
  },
  mode: { enum: DEDUPE_MODES },
};

/**
 * One rule as a JSON Schema, derived from RULE_FIELDS (the OpenAPI document's ToolRule), so the
 * document and the validator cannot drift; extra fields (Letta's prompt_template) stay open.
 */
export function toolRuleJsonSchema(): Obj {
  return {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: TOOL_RULE_TYPES } },
    oneOf: TOOL_RULE_TYPES.map((type) => ({
      properties: {
        type: { const: type },
        ...Object.fromEntries(
          Object.entries(RULE_FIELDS[type]).map(([f, k]) => [f, KIND_SCHEMA[k]]),
        ),
      },
      required: [
        'type',
        ...Object.entries(RULE_FIELDS[type])
          .filter(([, k]) => !k.endsWith('?'))
          .map(([f]) => f),
      ],
    })),
  };
}

/**
 * Validates tool rules as sent on create/update or in an agent file. Unknown extra fields are dropped;
 * every problem is reported with its path, not just the first. Duplicates (same canonical JSON) are kept once.
 */
export function validateToolRules(
  input: unknown,
  toolNames: string[],
  limits: InputLimits,
  basePath = 'tool_rules',
): { rules: StoredToolRule[]; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  if (input === undefined || input === null) return { rules: [], problems };
  if (!Array.isArray(input)) {
    return { rules: [], problems: [{ path: basePath, message: 'must be a list of rules' }] };
  }
  const tooMany = countProblem(basePath, input.length, 'max_rules_per_agent', limits);
  if (tooMany) return { rules: [], problems: [tooMany] };
  const known = new Set(toolNames);
  const rules: StoredToolRule[] = [];
  const seen = new Set<string>();

  input.forEach((item: unknown, i) => {
    const at = `${basePath}[${i}]`;
    const before = problems.length;
    const rule = validateOne(item, at, known, limits, problems);
    if (!rule || problems.length > before) return;
    const key = stableStringify(rule) ?? '';
    if (seen.has(key)) return;
    seen.add(key);
    rules.push(rule);
  });
  return { rules, problems };
}

function validateOne(
  item: unknown,
  at: string,
  known: Set<string>,
  limits: InputLimits,
  problems: ValidationProblem[],
): StoredToolRule | null {
  if (!isObj(item)) {
    problems.push({ path: at, message: 'must be an object' });
    return null;
  }
  const type = item.type;
  if (typeof type !== 'string') {
    problems.push({ path: `${at}.type`, message: 'is required (a string naming the rule type)' });
    return null;
  }
  if (!Object.prototype.hasOwnProperty.call(RULE_FIELDS, type)) {
    problems.push({
      path: `${at}.type`,
      message: `unknown rule type ${JSON.stringify(type)}; expected one of ${TOOL_RULE_TYPES.join(', ')}`,
    });
    return null;
  }
  const out: Obj = { type };
  const toolName = (v: unknown, path: string): string | undefined => {
    if (typeof v !== 'string' || v === '') {
      problems.push({ path, message: 'must be a non-empty tool name' });
      return undefined;
    }
    if (!known.has(v)) {
      problems.push({
        path,
        message: `names tool ${JSON.stringify(v)}, which the agent does not have`,
      });
    }
    return v;
  };

  for (const [field, kind] of Object.entries(RULE_FIELDS[type as ToolRuleType])) {
    const path = `${at}.${field}`;
    const v = item[field];
    const optional = kind.endsWith('?');
    if (v === undefined || (v === null && optional)) {
      if (!optional) problems.push({ path, message: 'is required' });
      else if (v === null && kind === 'child?') out[field] = null;
      continue;
    }
    switch (kind) {
      case 'tool':
      case 'child?':
        out[field] = toolName(v, path);
        break;
      case 'tool|*':
        out[field] = v === EVERY_TOOL ? v : toolName(v, path);
        break;
      case 'pattern':
        if (typeof v !== 'string' || !CONSENT_NAME.test(v))
          problems.push({
            path,
            message:
              'must be a tool name, or a pattern where * stands for any characters (letters, digits, _, -, *; at most 64)',
          });
        else out[field] = v;
        break;
      case 'tools':
        if (!Array.isArray(v)) problems.push({ path, message: 'must be a list of tool names' });
        else if (v.length === 0) problems.push({ path, message: 'must not be empty' });
        else out[field] = [...new Set(v.map((t: unknown, j) => toolName(t, `${path}[${j}]`)))];
        break;
      case 'count':
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
          problems.push({ path, message: 'must be a whole number, 0 or more' });
        else out[field] = v;
        break;
      case 'seconds':
      case 'seconds|0': {
        const problem = durationProblem(v, path, limits, kind === 'seconds' ? 1 : 0);
        if (problem) problems.push(problem);
        else out[field] = v;
        break;
      }
      case 'mapping':
        if (!isObj(v)) problems.push({ path, message: 'must be an object of output → tool name' });
        else if (Object.keys(v).length === 0) problems.push({ path, message: 'must not be empty' });
        else
          out[field] = Object.fromEntries(
            Object.entries(v).map(([k, t]) => [k, toolName(t, `${path}.${k}`)]),
          );
        break;
      case 'mode':
        if (typeof v !== 'string' || !DEDUPE_MODES.includes(v as DedupeMode))
          problems.push({
            path,
            message: `unknown dedupe mode ${JSON.stringify(v)}; expected one of ${DEDUPE_MODES.join(', ')}`,
          });
        else out[field] = v;
        break;
      case 'bool?':
        if (typeof v !== 'boolean') problems.push({ path, message: 'must be true or false' });
        else out[field] = v;
        break;
      case 'string?':
        if (typeof v !== 'string' || v === '')
          problems.push({ path, message: 'must be a non-empty string' });
        else out[field] = v;
        break;
      case 'object?':
        if (!isObj(v)) problems.push({ path, message: 'must be an object' });
        else out[field] = v;
        break;
      case 'argNodes?':
        out[field] = argNodes(v, path, item.children, problems);
        break;
    }
  }
  const tpl = item.prompt_template;
  if (tpl !== undefined && tpl !== null) {
    if (typeof tpl !== 'string')
      problems.push({ path: `${at}.prompt_template`, message: 'must be a string' });
    else out.prompt_template = tpl;
  }
  return out as StoredToolRule;
}

/** Letta's child_arg_nodes: each `{name, args?}` names one of the rule's children (Letta's validator). */
function argNodes(
  v: unknown,
  path: string,
  children: unknown,
  problems: ValidationProblem[],
): ChildArgNode[] | undefined {
  if (!Array.isArray(v)) {
    problems.push({ path, message: 'must be a list of {name, args} nodes' });
    return undefined;
  }
  const kids = Array.isArray(children) ? children : [];
  return v.map((node: unknown, j) => {
    const at = `${path}[${j}]`;
    if (!isObj(node)) {
      problems.push({ path: at, message: 'must be an object {name, args?}' });
      return { name: '' };
    }
    if (typeof node.name !== 'string' || !kids.includes(node.name))
      problems.push({ path: `${at}.name`, message: "must name one of the rule's children" });
    if (node.args !== undefined && node.args !== null && !isObj(node.args))
      problems.push({ path: `${at}.args`, message: 'must be an object' });
    return { name: node.name as string, ...(isObj(node.args) ? { args: node.args } : {}) };
  });
}
