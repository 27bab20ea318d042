import type { AgentToolSetup } from '../executor/contracts';
import type { ToolDefinition } from '../tools/tool-definition';
import type { ConditionalRule } from './conditional.rule';
import type { ConstrainChildRule } from './constrain-child-tools.rule';
import type { CooldownRule } from './cooldown.rule';
import type { DedupeRule } from './dedupe.rule';
import type { ExclusiveGroupRule } from './exclusive-group.rule';
import type { MaxCountRule } from './max-count.rule';
import type { ParentLastRule } from './parent-last-tool.rule';
import type { RequiresFollowingRule } from './requires-following-tools.rule';
import type { RequiresPrecedingRule } from './requires-preceding-tools.rule';
import type { RunFirstRule } from './run-first.rule';
import { canonicalRuleType, ToolRule } from './tool-rule';
import { EVERY_TOOL } from './validate-tool-rules';
import type { RuleOf } from './verdict';

export type ConsentRule = RuleOf<'requires_consent' | 'requires_approval'>;

/** An agent's rules indexed by the tool they constrain, so a call looks up only what concerns it. */
export interface RuleIndex {
  tools: Map<string, ToolDefinition>;
  toolNames: string[];
  startTools: Map<string, RunFirstRule>;
  preceding: Map<string, RequiresPrecedingRule[]>;
  following: Map<string, RequiresFollowingRule[]>;
  /** Keyed by the parent: apply when the parent was the last tool. */
  childConstraints: Map<string, ConstrainChildRule[]>;
  /** Parent → child → args a constrain_child_tools rule's child_arg_nodes give it (Letta's). */
  childArgs: Map<string, Map<string, Record<string, unknown>>>;
  conditionals: Map<string, ConditionalRule[]>;
  /** Keyed by the child. */
  parentLast: Map<string, ParentLastRule[]>;
  /** The same rules keyed by the parent: right after it, only its children may run. */
  parentNext: Map<string, ParentLastRule[]>;
  maxCount: Map<string, MaxCountRule[]>;
  maxCountStar: MaxCountRule[];
  groups: Map<string, ExclusiveGroupRule[]>;
  cooldowns: Map<string, CooldownRule[]>;
  dedupe: Map<string, DedupeRule>;
  dedupeStar?: DedupeRule;
  consent: Map<string, ConsentRule>;
  continueLoop: Set<string>;
  exitLoop: Set<string>;
  requiredBeforeExit: string[];
  /** Any rule that makes the order of calls matter within a pass (no concurrent read_only runs then). */
  hasOrderingRules: boolean;
}

const cache = new WeakMap<AgentToolSetup, RuleIndex>();

/** Compiled once per AgentToolSetup object (the processor keeps one per agent and pass). */
export function ruleIndexFor(setup: AgentToolSetup): RuleIndex {
  let idx = cache.get(setup);
  if (!idx) cache.set(setup, (idx = compileRules(setup.tools, setup.rules)));
  return idx;
}

function push<T>(map: Map<string, T[]>, key: string, v: T): void {
  const arr = map.get(key);
  if (arr) arr.push(v);
  else map.set(key, [v]);
}

export function compileRules(
  tools: readonly ToolDefinition[],
  rules: readonly ToolRule[],
): RuleIndex {
  /** Tools whose consent rule came from a pattern (a tool's own rule replaces it). */
  const byPattern = new Set<string>();
  const idx: RuleIndex = {
    tools: new Map(tools.map((t) => [t.name, t])),
    toolNames: tools.map((t) => t.name),
    startTools: new Map(),
    preceding: new Map(),
    following: new Map(),
    childConstraints: new Map(),
    childArgs: new Map(),
    conditionals: new Map(),
    parentLast: new Map(),
    parentNext: new Map(),
    maxCount: new Map(),
    maxCountStar: [],
    groups: new Map(),
    cooldowns: new Map(),
    dedupe: new Map(),
    consent: new Map(),
    continueLoop: new Set(),
    exitLoop: new Set(),
    requiredBeforeExit: [],
    hasOrderingRules: false,
  };
  for (const rule of rules) {
    const type = canonicalRuleType(rule.type);
    switch (type) {
      case 'run_first': {
        const r = rule as RunFirstRule;
        if (!idx.startTools.has(r.tool_name)) idx.startTools.set(r.tool_name, r);
        break;
      }
      case 'requires_preceding_tools': {
        const r = rule as RequiresPrecedingRule;
        push(idx.preceding, r.tool_name, r);
        break;
      }
      case 'requires_following_tools': {
        const r = rule as RequiresFollowingRule;
        push(idx.following, r.tool_name, r);
        break;
      }
      case 'constrain_child_tools': {
        const r = rule as ConstrainChildRule;
        push(idx.childConstraints, r.tool_name, r);
        for (const node of r.child_arg_nodes ?? []) {
          if (!node.args) continue;
          let byChild = idx.childArgs.get(r.tool_name);
          if (!byChild)
            idx.childArgs.set(r.tool_name, (byChild = new Map<string, Record<string, unknown>>()));
          byChild.set(node.name, { ...byChild.get(node.name), ...node.args }); // last write wins, as Letta's
        }
        break;
      }
      case 'conditional': {
        const r = rule as ConditionalRule;
        push(idx.conditionals, r.tool_name, r);
        break;
      }
      case 'parent_last_tool': {
        const r = rule as ParentLastRule;
        for (const child of r.children) push(idx.parentLast, child, r);
        push(idx.parentNext, r.tool_name, r);
        break;
      }
      case 'max_count_per_step': {
        const r = rule as MaxCountRule;
        if (r.tool_name === EVERY_TOOL) idx.maxCountStar.push(r);
        else push(idx.maxCount, r.tool_name, r);
        break;
      }
      case 'exclusive_group': {
        const r = rule as ExclusiveGroupRule;
        for (const t of new Set(r.tools)) push(idx.groups, t, r);
        break;
      }
      case 'cooldown': {
        const r = rule as CooldownRule;
        push(idx.cooldowns, r.tool_name, r);
        break;
      }
      case 'dedupe': {
        const r = rule as DedupeRule;
        if (r.tool_name === EVERY_TOOL) idx.dedupeStar ??= r;
        else if (!idx.dedupe.has(r.tool_name)) idx.dedupe.set(r.tool_name, r);
        break;
      }
      case 'requires_consent': {
        // a tool's own rule wins over a pattern's; otherwise the first rule that names it
        const r = rule as ConsentRule;
        if (!r.tool_name.includes('*')) {
          if (!idx.consent.has(r.tool_name) || byPattern.has(r.tool_name)) {
            idx.consent.set(r.tool_name, r);
            byPattern.delete(r.tool_name);
          }
          break;
        }
        const re = globRegExp(r.tool_name);
        for (const t of idx.toolNames)
          if (re.test(t) && !idx.consent.has(t)) {
            idx.consent.set(t, r);
            byPattern.add(t);
          }
        break;
      }
      case 'continue_loop':
        idx.continueLoop.add((rule as RuleOf<'continue_loop'>).tool_name);
        break;
      case 'exit_loop':
        idx.exitLoop.add((rule as RuleOf<'exit_loop'>).tool_name);
        break;
      case 'required_before_exit': {
        const name = (rule as RuleOf<'required_before_exit'>).tool_name;
        if (!idx.requiredBeforeExit.includes(name)) idx.requiredBeforeExit.push(name);
        break;
      }
    }
  }
  idx.hasOrderingRules =
    idx.startTools.size > 0 ||
    idx.preceding.size > 0 ||
    idx.following.size > 0 ||
    idx.childConstraints.size > 0 ||
    idx.conditionals.size > 0 ||
    idx.parentLast.size > 0;
  return idx;
}

/** `delete_*` → /^delete_.*$/ (a consent name holds only letters, digits, `_`, `-` and `*`). */
function globRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').join('.*')}$`);
}
