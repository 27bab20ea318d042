import {
  ALLOW,
  deny,
  isWaiting,
  lastCall,
  list,
  RuleOf,
  RuleView,
  Verdict,
  waits,
} from './verdict';

export type ConstrainChildRule = RuleOf<'constrain_child_tools'>;

/**
 * constrain_child_tools (pass), and parent_last_tool's parent side: right after tool_name, only `children`
 * may run. A call of tool_name that waits for consent in this turn runs before the later ones once
 * approved, so it is their last call.
 */
export function checkConstrainChild(
  rule: ConstrainChildRule | RuleOf<'parent_last_tool'>,
  tool: string,
  view: RuleView,
): Verdict {
  const last = lastCall(view);
  if (last?.toolName !== rule.tool_name || rule.children.includes(tool)) return ALLOW;
  return deny(
    'RuleViolation',
    `right after ${rule.tool_name} only ${list(rule.children)} may run, not ${tool}${isWaiting(last) ? ` (${waits(last)} and runs first)` : ''}`,
    rule,
    isWaiting(last) ? last : undefined,
  );
}
