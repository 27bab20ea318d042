/**
 * Tool rules as stored with an agent (Letta's types plus ours), discriminated by `type`.
 * Aliases are kept as sent (a Letta client reads back what it wrote) and normalised by `canonicalRuleType`.
 */
export type DedupeMode = 'reject' | 'return_cached' | 'off';

export type ToolRule =
  | { type: 'run_first' | 'start_constraint'; tool_name: string; args?: Record<string, unknown> }
  | { type: 'exit_loop'; tool_name: string }
  | { type: 'continue_loop'; tool_name: string }
  | {
      type: 'constrain_child_tools';
      tool_name: string;
      children: string[];
      /** Letta's: a child's args, over the model's, when it runs right after tool_name. */
      child_arg_nodes?: ChildArgNode[] | null;
    }
  | { type: 'parent_last_tool'; tool_name: string; children: string[] }
  | {
      type: 'conditional';
      tool_name: string;
      child_output_mapping: Record<string, string>;
      default_child?: string | null;
      require_output_mapping?: boolean;
    }
  | { type: 'max_count_per_step' | 'max_calls'; tool_name: string; max_count_limit: number }
  | { type: 'required_before_exit'; tool_name: string }
  | { type: 'requires_preceding_tools'; tool_name: string; tools: string[] }
  | { type: 'requires_following_tools'; tool_name: string; tools: string[] }
  | { type: 'exclusive_group'; tools: string[]; group?: string }
  | { type: 'cooldown'; tool_name: string; seconds: number }
  | { type: 'dedupe'; tool_name: string; window_seconds: number; mode: DedupeMode }
  | { type: 'requires_consent' | 'requires_approval'; tool_name: string; scope?: string };

export type ToolRuleType = ToolRule['type'];

/** Letta's ToolCallNode: one child of a constrain_child_tools rule and the args it gets. */
export interface ChildArgNode {
  name: string;
  args?: Record<string, unknown> | null;
}

export const RULE_ALIASES = {
  start_constraint: 'run_first',
  max_calls: 'max_count_per_step',
  requires_approval: 'requires_consent',
} as const;

type Alias = keyof typeof RULE_ALIASES;
export type CanonicalRuleType = Exclude<ToolRuleType, Alias>;

export function canonicalRuleType(type: ToolRuleType): CanonicalRuleType {
  return (RULE_ALIASES as Record<string, CanonicalRuleType>)[type] ?? (type as CanonicalRuleType);
}

/** Whether a rule has a person decide before `toolName` runs (`requires_consent`, Letta's `requires_approval`). */
export function asksConsentFor(rule: ToolRule, toolName: string): boolean {
  return (
    canonicalRuleType(rule.type) === 'requires_consent' &&
    'tool_name' in rule &&
    rule.tool_name === toolName
  );
}

/**
 * Letta's `default_requires_approval`: the agent's rules with a `requires_approval` rule added for each tool
 * given to it (`toolNames`, those whose declaration asks for one) that no consent rule names yet.
 */
export function withApprovalRules<R extends ToolRule>(
  rules: R[],
  toolNames: readonly string[],
): (R | ToolRule)[] {
  const added = [...new Set(toolNames)]
    .filter((name) => !rules.some((r) => asksConsentFor(r, name)))
    .map((name): ToolRule => ({ type: 'requires_approval', tool_name: name }));
  return added.length ? [...rules, ...added] : rules;
}
